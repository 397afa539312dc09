//! Rule family: wellformed (being written).
use crate::module::Cx;
use crate::Sink;
pub(crate) fn check(_cx: &Cx<'_>, _out: &mut Sink) {}
