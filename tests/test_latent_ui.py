"""Registration of the latent-editing classes and handlers, and the panel's drawing code, run
headless against a recording layout (every property it draws must resolve, every operator exist)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs
from latent_helpers import AUTOENCODER, encoded_copy, encoded_segments, setup_scene

bpy = bpy()
pytestmark = pytest.mark.blender
CLASSES = ("ANIM_OT_splinetween_encode", "ANIM_OT_splinetween_bake", "ANIM_OT_splinetween_remove",
           "ANIM_OT_splinetween_latent_reset", "ANIM_OT_splinetween_redecode", "ANIM_OT_splinetween_resample",
           "ANIM_OT_splinetween_principal_info", "VIEW3D_PT_splinetween_latent")


class Recorder:
    """Stands in for a UILayout: records what is drawn, hands out sub-layouts and open panels."""

    def __init__(self, log):
        self.__dict__["log"] = log

    def __setattr__(self, name, value):
        self.log.append(("set", name, value))

    def __getattr__(self, name):
        def call(*args, **kw):
            self.log.append((name, args, kw))
            if name in ("row", "column", "box", "split"):
                return Recorder(self.log)
            if name == "panel":
                return Recorder(self.log), Recorder(self.log)
            if name == "operator":
                return SimpleNamespace(idname=args[0])
            return None
        return call


def draw(obj) -> list:
    from blender_addon.ui.latent_panel import VIEW3D_PT_splinetween_latent as P
    log = []
    me = SimpleNamespace(layout=Recorder(log), draw_segments=P.draw_segments)
    P.draw(me, SimpleNamespace(active_object=obj, preferences=bpy.context.preferences, scene=bpy.context.scene))
    for kind, args, _kw in [e for e in log if e[0] in ("prop", "operator")]:
        if kind == "prop":
            data, name = args[:2]
            assert (data.path_resolve(name, False) is not None) if name.startswith("[") else hasattr(data, name), name
        else:
            assert hasattr(bpy.types, "ANIM_OT_" + args[0].split(".")[1]), args[0]
    return log


def texts(log) -> str:
    return " ".join(e[2].get("text", "") for e in log if e[0] == "label")


def operators(log, idname: str) -> list:
    return [e for e in log if e[0] == "operator" and e[1][0] == idname]


def test_classes_and_handlers_come_and_go():
    from blender_addon.latent import props as latent_props
    fresh_scene_with_addon()
    assert all(hasattr(bpy.types, c) for c in CLASSES) and hasattr(bpy.types.Object, "splinetween_latent")
    for name, fn in latent_props._HANDLERS:
        assert getattr(bpy.app.handlers, name).count(fn) == 1
    assert prefs().autoencoder == ""
    disable_addon()
    assert not any(hasattr(bpy.types, c) for c in CLASSES) and not hasattr(bpy.types.Object, "splinetween_latent")
    for name, fn in latent_props._HANDLERS:
        assert fn not in getattr(bpy.app.handlers, name)


def test_the_panel_draws_every_state(tmp_path):
    src = setup_scene()
    log = draw(src)
    assert ("operator", ("anim.splinetween_encode",), {"icon": "IPO_BEZIER"}) in log
    obj = encoded_copy(src.name)
    log = draw(obj)
    st = obj.splinetween_latent
    segs = encoded_segments(273)  # frames 0-272 of the scene's 1-273
    assert f"Frames 1-273, {len(segs)} segments (encoded)" in texts(log)
    assert f"Segment {len(segs)}: frames {segs[-1][0] + 1}-273" in texts(log)
    props = [e[1][1] for e in log if e[0] == "prop"]
    names = [n for n in st.principal_names.split("\n") if n]
    assert props.count("amplify") == len(segs) and props.count("principal") == len(segs) * len(names)
    assert props.count('["splinetween_s04_c3"]') == 1
    # Encode is greyed out: why, and the next step right there
    assert "Encode is off: Encode made latent controls on frames 1-273. Bake" in texts(log)
    assert len(operators(log, "anim.splinetween_bake")) == 1 and len(operators(log, "anim.splinetween_remove")) == 1
    assert not bpy.ops.anim.splinetween_encode.poll()
    # the model's fit, per segment; no warning on the familiar walk
    assert texts(log).count("Model fit ") == len(segs) and "knows this motion poorly" not in texts(log)
    labels = [e[2]["text"] for e in log if e[0] == "prop" and e[1][1] == "principal"]
    assert labels[:len(names)] == [n[0].upper() + n[1:] for n in names]  # the checkpoint's names, as given
    # the shipped checkpoint describes every direction: an info button beside each slider
    assert len(operators(log, "anim.splinetween_principal_info")) == len(segs) * len(names)
    obj[("splinetween_s01_c0")][0] = float("nan")
    assert bpy.ops.anim.splinetween_redecode.poll()
    with pytest.raises(RuntimeError):
        bpy.ops.anim.splinetween_redecode()
    assert "splinetween_s01_c0[0] is nan;" in texts(draw(obj))
    st.checkpoint, prefs().autoencoder = str(tmp_path / "gone.json"), str(tmp_path / "gone.json")
    log = draw(obj)
    assert "is missing: sliders are off;" in texts(log) and ("set", "enabled", False) in log
    prefs().autoencoder = str(AUTOENCODER)
    disable_addon()


def test_principal_directions_show_their_descriptions_as_tooltips(tmp_path):
    """A checkpoint with a sentence per direction (info.principal_descriptions): each slider gets an info
    button whose tooltip (the operator's dynamic description) is its direction's sentence."""
    import json
    import shutil
    from types import SimpleNamespace
    doc = json.loads(AUTOENCODER.read_text())
    names = ["Stride length", "Arms: raise", "Crouch"] + [f"Direction {k}" for k in range(4, 9)]
    doc["info"]["principal_names"] = names
    doc["info"]["principal_descriptions"] = [f"Moves the body along direction {k + 1}." for k in range(8)]
    shutil.copy(AUTOENCODER.with_suffix(".safetensors"), tmp_path / AUTOENCODER.with_suffix(".safetensors").name)
    (tmp_path / AUTOENCODER.name).write_text(json.dumps(doc))
    src = setup_scene()
    prefs().autoencoder = str(tmp_path / AUTOENCODER.name)
    obj = encoded_copy(src.name)
    log = draw(obj)
    st = obj.splinetween_latent
    infos = operators(log, "anim.splinetween_principal_info")
    assert len(infos) == len(st.segments) * len(names)
    assert [e[2]["text"] for e in log if e[0] == "prop" and e[1][1] == "principal"][:3] == names[:3]
    from blender_addon.ui.latent_panel import ANIM_OT_splinetween_principal_info as Info
    context = SimpleNamespace(active_object=obj)
    assert Info.description(context, SimpleNamespace(index=1)) == "Arms: raise: Moves the body along direction 2."
    assert bpy.ops.anim.splinetween_principal_info(index=2) == {"FINISHED"}
    # a checkpoint without descriptions: the names only, no info buttons
    del doc["info"]["principal_descriptions"]
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(AUTOENCODER.with_suffix(".safetensors"), bare / AUTOENCODER.with_suffix(".safetensors").name)
    (bare / AUTOENCODER.name).write_text(json.dumps(doc))
    prefs().autoencoder = str(bare / AUTOENCODER.name)
    log = draw(encoded_copy(src.name))
    assert not operators(log, "anim.splinetween_principal_info")
    assert [e[2]["text"] for e in log if e[0] == "prop" and e[1][1] == "principal"][:3] == names[:3]
    prefs().autoencoder = str(AUTOENCODER)
    disable_addon()


def test_the_panel_warns_when_the_model_knows_the_motion_poorly(tmp_path):
    from addon_helpers import import_bvh
    from latent_helpers import shaken_bvh
    setup_scene()
    obj = import_bvh(shaken_bvh(tmp_path))
    assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}
    text = texts(draw(obj))
    n = len(obj.splinetween_latent.segments)
    assert "Segments 1, 2, 3, 4, 5, 6 ...: the model knows this motion poorly: edits may look unnatural" in text
    assert text.count("the model knows this motion poorly") == n + 1  # the box, and each segment's fit
    disable_addon()


def test_the_panel_says_when_the_layer_is_on_top_of_an_edited_animation_and_when_the_take_changed():
    """Issue 29: a key changed by hand since Encode is named in the panel; another action assigned
    greys the sliders out with both takes named."""
    src = setup_scene()
    obj = encoded_copy(src.name)
    assert "edited animation" not in texts(draw(obj))
    from addon_helpers import channelbag
    fc = channelbag(obj).fcurves.find('pose.bones["Hips"].location', index=1)
    kp = fc.keyframe_points[60]
    kp.co_ui = (kp.co.x, kp.co.y + 0.5)
    fc.update()
    obj.splinetween_latent.segments[0].amplify = 2.0
    assert "on top of your edited animation" in texts(draw(obj))
    first = obj.animation_data.action
    obj.animation_data.action = first.copy()
    obj.animation_data.action.name = "Take 2"
    log = draw(obj)
    assert "now plays 'Take 2'" in texts(log) and f"on '{first.name}'" in texts(log)
    assert ("set", "enabled", False) in log
    disable_addon()
