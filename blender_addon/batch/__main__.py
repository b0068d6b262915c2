"""Entry point: ``python -m blender_addon.batch ...`` (the bpy module), or inside Blender
``blender -b --python <add-on folder>/batch/__main__.py -- ...`` (arguments after ``--``)."""
import sys

if __package__:
    from . import main
    sys.exit(main())
else:  # run as a script (by Blender): import the add-on package by its folder name
    from pathlib import Path

    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]  # no shadowing by our modules
    sys.path.insert(0, str(here.parent.parent))
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    sys.exit(__import__(f"{here.parent.name}.batch", fromlist=["main"]).main(argv))
