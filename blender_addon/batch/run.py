"""The coordinator: skip what is done, hand the rest to the workers, report as files finish."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from . import report, safe_io


def _entry(item, status: str, **fields) -> dict:
    entry = {"input": str(item.source), "output": str(item.output) if item.output else None, "file_type": item.file_type,
             "status": status, "objects": [], "gaps": 0, "frames_written": 0, "seconds": 0.0, "warnings": [],
             "errors": []}
    entry.update(fields)
    return entry


def _info_lines(entry: dict) -> list[str]:
    if entry["status"] == "failed":
        return [f"{entry['input']}: failed: {'; '.join(entry['errors'])}"]
    lines = [entry["input"]]
    for o in entry["objects"]:
        fit = "fits the model" if o.get("fits_model") else f"does not fit ({o.get('reason', '')})"
        if entry["file_type"] in ("bvh", "amc"):
            lines.append(f"  {o['name']}: {o['frames']} frames at {1 / o['frame_time']:.4g} fps, {o['joints']} joints, "
                         f"{fit}")
            continue
        keys = f"{o.get('keys', 0)} keys on {o.get('fcurves', 0)} curves, range {o.get('key_range')}" \
            if o.get("action") else "no action"
        sel = o.get("selected_key_frames") or []
        lines.append(f"  {o['name']}: {o['bones']} bones, {fit}; action {o.get('action')}: {keys}; "
                     f"{len(sel)} selected key frames; {len(o.get('markers', []))} markers; {o.get('fps', 0):g} fps")
    scripts = entry.get("scripts")
    if scripts and (scripts["text_blocks"] or scripts["python_drivers"]):
        lines.append(f"  scripts (not run): {scripts['text_blocks']} text blocks "
                     f"({', '.join(scripts['registered']) or 'none'} registered), {scripts['python_drivers']} Python drivers")
    lines += [f"  warning: {w}" for w in entry["warnings"] if not w.startswith("the file holds")]
    return lines


def _size(job: dict) -> int:
    try:
        return os.stat(job["source"]).st_size
    except OSError:
        return 0


def _threads(workers: int) -> int:
    """Math threads per worker: OMP_NUM_THREADS when set, else the cores shared out.  The workers get
    the same number for MKL and the backend process too, as spinning BLAS threads on busy cores slow
    everything down (measured: 4-8x on a loaded machine)."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return max(1, (os.cpu_count() or 1) // workers)


def execute(args, argv, items, options, digest, settings, report_path, in_place, who) -> int:
    from .claims import Claims
    writes = args.command != "info"
    rep = report.Report(report_path, args.command, argv, options, {k: v for k, v in settings.items()}, args.jobs,
                        who.get("run", ""))
    if report_path is not None and report_path.parent.is_dir():
        safe_io.remove_dead_report_temps(report_path.parent)
    rep.doc["digest"] = digest
    rep.save()  # at once: a second run, or a person, sees this one from its start
    claims = Claims(who, digest, in_place, bool(getattr(args, "force", False)), args.timeout or None, args.quiet)
    try:
        return _execute(args, items, options, digest, settings, in_place, rep, claims, writes)
    finally:
        claims.release_all()


def _execute(args, items, options, digest, settings, in_place, rep, claims, writes) -> int:
    from .pool import Pool
    report_path = rep.path
    jobs, ready = [], []
    for n, item in enumerate(items):
        if item.problem:
            ready.append(_entry(item, "failed", output=None, errors=[f"{item.source}: {item.problem}"]))
            continue
        if writes and not args.force:
            previous = safe_io.is_done(item.source, item.output, digest, in_place)
            if previous is not None:
                ready.append(_entry(item, "skipped", previous={k: previous.get(k) for k in
                                                               ("frames_written", "gaps", "seconds")}))
                continue
        jobs.append({"id": n, "command": args.command, "file_type": item.file_type, "source": str(item.source),
                     "output": str(item.output) if item.output else None, "in_place": in_place, "digest": digest,
                     "options": options})
    jobs.sort(key=_size, reverse=True)  # largest first: a big file started last would keep one worker busy alone
    progress = report.Progress(len(items), enabled=not args.quiet)
    seen: dict = {}

    def finished(job, entry):
        claims.release(job)
        if job and job.get("waited"):
            entry["warnings"].append(job["waited"])
        entry["done_s"] = round(time.perf_counter() - rep.t0, 3)
        progress.frames += entry.get("frames_written", 0) - seen.pop(job["id"] if job else None, 0)
        progress.file_done(entry, counted_frames=True)
        rep.add(entry)

    for entry in ready:
        finished(None, entry)

    def on_progress(job, frames):
        seen[job["id"]] = seen.get(job["id"], 0) + frames
        progress.frames_done(frames)

    if jobs:
        threads = _threads(min(args.jobs, len(jobs)))
        preload = {"inbetween": "inbetween", "encode": "autoencoder", "edit": "autoencoder",
                   "mesh-inbetween": "mesh_inbetween", "mesh-encode": "mesh_autoencoder"}.get(args.command)
        logs = report_path.with_name(report_path.stem + "-logs") if report_path else None
        pool = Pool(min(args.jobs, len(jobs)), settings, args.timeout or None, threads, preload, logs)
        try:
            pool.run(jobs, finished, on_progress, tick=progress.draw, admit=claims.admit if writes else None)
        except KeyboardInterrupt:
            progress.close()
            for job in jobs:  # this run's killed workers' (no live run's: see safe_io)
                if job["output"]:
                    safe_io.remove_stale_temps(Path(job["output"]))
            rep.save("interrupted")
            print(f"interrupted; {rep.summary_line()}", file=sys.stderr)
            return 130
        rep.doc["worker_logs"] = pool.kept_logs
        rep.doc["workers"] = [{"pid": w.hello.get("pid"), "started_s": round(w.started_at - rep.t0, 3),
                               "ready_s": round(w.ready_at - rep.t0, 3), "startup": w.hello.get("startup"),
                               "blender": w.hello.get("blender"),
                               "model": w.model.get("model", "not loaded before the worker finished"),
                               "model_s": w.model.get("seconds")}
                              for w in pool.workers]
    progress.close()
    rep.doc["files"].sort(key=lambda e: e["input"])
    rep.save("finished")
    failed = rep.counts()["failed"]
    if args.command == "info":
        if getattr(args, "json", False):
            print(json.dumps(rep.doc, indent=1))
        else:
            for entry in rep.doc["files"]:
                print("\n".join(_info_lines(entry)))
    print(rep.summary_line(), file=sys.stderr if getattr(args, "json", False) else sys.stdout)
    return 1 if failed else 0
