//! The module's types with the memory layout the simulator uses: decorated offsets and strides
//! (std430/std140 as the module says) where present, packed natural layout elsewhere (function,
//! private and workgroup memory are the simulator's own, so any consistent layout is right).

/// A scalar leaf of a value: what one `u64` lane slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// 0 or 1 (4 bytes in memory).
    Bool,
    /// An integer of `width` bits.
    Int {
        /// 8, 16, 32 or 64.
        width: u32,
        /// Signedness as declared (most instructions ignore it).
        signed: bool,
    },
    /// A float of `width` bits.
    Float {
        /// 16, 32 or 64.
        width: u32,
    },
    /// A pointer: memory object in the high 32 bits, byte offset in the low 32.
    Ptr,
}

impl Scalar {
    /// Bytes in memory.
    pub fn bytes(self) -> u32 {
        match self {
            Scalar::Bool => 4,
            Scalar::Int { width, .. } | Scalar::Float { width } => width / 8,
            Scalar::Ptr => 8,
        }
    }

    /// Bits of the value (bools 1).
    pub fn width(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            Scalar::Int { width, .. } | Scalar::Float { width } => width,
            Scalar::Ptr => 64,
        }
    }
}

/// A type's shape.
#[derive(Clone, Debug)]
pub enum Shape {
    /// `OpTypeVoid`, `OpTypeFunction` and the like: no value.
    Void,
    /// A scalar (see [`TypeInfo::layout`]).
    Scalar,
    /// `n` components of the scalar type `elem`.
    Vector {
        /// Element type id.
        elem: u32,
        /// Component count.
        n: u32,
    },
    /// `n` elements of `elem` at `stride` bytes (vectors' columns for matrices).
    Array {
        /// Element type id.
        elem: u32,
        /// Element count (0 for runtime arrays).
        n: u32,
        /// Bytes between elements.
        stride: u32,
        /// `OpTypeRuntimeArray`.
        runtime: bool,
    },
    /// Members at byte offsets.
    Struct {
        /// Member type ids.
        members: Vec<u32>,
        /// Byte offset of each member.
        offsets: Vec<u32>,
    },
    /// A pointer to `pointee`.
    Pointer {
        /// Pointee type id.
        pointee: u32,
    },
}

/// A type with its register and memory layout.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// Shape.
    pub shape: Shape,
    /// Scalar leaves (register slots per lane).
    pub leaves: u32,
    /// Bytes in memory (0 for runtime arrays and structs ending in one: unbounded).
    pub size: u32,
    /// Alignment in the packed layout.
    pub align: u32,
    /// Each leaf's byte offset and scalar, in order.
    pub layout: Vec<(u32, Scalar)>,
}

/// Most leaves a single value may have (a bound on registers and translation time).
pub const MAX_LEAVES: u32 = 1 << 16;

impl TypeInfo {
    /// A scalar type.
    pub fn scalar(s: Scalar) -> Self {
        TypeInfo {
            shape: Shape::Scalar,
            leaves: 1,
            size: s.bytes(),
            align: s.bytes(),
            layout: vec![(0, s)],
        }
    }

    /// A type without a value.
    pub fn void() -> Self {
        TypeInfo {
            shape: Shape::Void,
            leaves: 0,
            size: 0,
            align: 1,
            layout: Vec::new(),
        }
    }

    /// The scalar of a scalar or vector type (of a vector's elements), if any.
    pub fn scalar_of(&self) -> Option<Scalar> {
        self.layout.first().map(|l| l.1)
    }
}

/// Rounds `x` up to a multiple of `a` (a power of two or any positive number).
pub fn align_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a.max(1)) * a.max(1)
}
