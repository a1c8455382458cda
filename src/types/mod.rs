//! The `types` layer: plain data a memory is made of, with no operations
//! on it (the operations are in the modules named after each concept). Issue
//! 27 moves the data types here from the modules that held them beside
//! their operations; those modules re-export them.

pub mod entity;
pub mod erase;
pub mod fade;
pub mod recall;
pub mod trace;
