//! Test helper.
