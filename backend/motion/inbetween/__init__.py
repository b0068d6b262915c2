"""The in-betweening pass: the fill through the keys, its guard, planted feet, Blender's own curves."""
