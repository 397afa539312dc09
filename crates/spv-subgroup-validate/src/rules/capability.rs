//! Rule family: capability (being written).
use crate::module::Cx;
use crate::Sink;
pub(crate) fn check_module(_cx: &Cx<'_>, _out: &mut Sink) {}
