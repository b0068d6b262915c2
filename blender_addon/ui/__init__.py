"""The sidebar panels, menus, keymaps and per-scene settings."""
