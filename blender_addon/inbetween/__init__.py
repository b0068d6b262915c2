"""Inbetween: fill the gaps between selected keys with the model's motion."""
