//! Rule family: partitioned_arith (being written).
use crate::module::Cx;
use crate::Sink;
pub(crate) fn is_partitioned(_cx: &Cx<'_>, _i: usize) -> bool {
    false
}
pub(crate) fn check(_cx: &Cx<'_>, _i: usize, _out: &mut Sink) {}
pub(crate) fn check_not_arithmetic(_cx: &Cx<'_>, _i: usize, _out: &mut Sink) {}
