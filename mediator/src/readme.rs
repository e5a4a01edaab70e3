//! The README's Rust examples, compiled and run as doctests.

#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
