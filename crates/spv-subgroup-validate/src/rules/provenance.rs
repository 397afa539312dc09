//! Rule family: provenance (being written).
use crate::module::Cx;
use crate::Sink;
pub(crate) fn check(_cx: &Cx<'_>, _i: usize, _out: &mut Sink) {}
