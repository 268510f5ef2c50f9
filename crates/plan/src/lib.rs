//! Pure prefetch planning (placeholder while the planner is written).
