"""Pure maths: quaternions (numpy and torch twins), spline bases, scene time <-> model time."""
