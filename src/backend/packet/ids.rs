//! Ids of the hot path: ports, packets, queue pairs and port lanes.
//!
//! Each is a `u32` in a `#[repr(transparent)]` wrapper, so it costs exactly
//! what the bare integer did (events, packets and queues keep their sizes),
//! but a port id can no longer be passed where a packet index or a queue pair
//! is expected: the handlers take all of them, often side by side, and a
//! swapped pair of `u32`s compiled and silently simulated something else.
//! Index a vector with [`PortId::idx`] and friends, or through the owning
//! part's `Index` impl.

/// A port: the sending side of one directed link, same number as the link's
/// [`LinkId`](crate::topology::LinkId).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u32);

/// A packet's slot in the [`Slab`](super::slab::Slab).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PktIdx(pub u32);

/// A queue pair (source GPU, destination GPU, NCCL channel), numbered in
/// creation order.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QpId(pub u32);

/// One virtual lane of one port, `port · vls + vl`: the index of the per-lane
/// vectors (queues, credits, PFC state). Built only by [`PortId::lane`], so
/// the multiplication by the lane count lives in one place.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneIdx(pub u32);

impl PortId {
    /// "No port": a packet still at its source has arrived over none.
    pub const NONE: PortId = PortId(u32::MAX);

    /// The index into per-port vectors.
    #[inline(always)]
    pub fn idx(self) -> usize {
        self.0 as usize
    }

    /// Whether this is a real port (not [`PortId::NONE`]).
    #[inline(always)]
    pub fn is_some(self) -> bool {
        self != PortId::NONE
    }

    /// Lane `vl` of this port, with `vls` lanes per port.
    #[inline(always)]
    pub fn lane(self, vl: u8, vls: usize) -> LaneIdx {
        debug_assert!((vl as usize) < vls);
        LaneIdx(self.0 * vls as u32 + vl as u32)
    }
}

impl From<crate::topology::LinkId> for PortId {
    #[inline(always)]
    fn from(l: crate::topology::LinkId) -> PortId {
        PortId(l.0)
    }
}

impl PktIdx {
    /// The index into the slab's slots.
    #[inline(always)]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl QpId {
    /// The index into per-queue-pair vectors.
    #[inline(always)]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl LaneIdx {
    /// The index into per-lane vectors.
    #[inline(always)]
    pub fn idx(self) -> usize {
        self.0 as usize
    }

    /// The port this lane belongs to, with `vls` lanes per port.
    #[inline(always)]
    pub fn port(self, vls: usize) -> PortId {
        PortId(self.0 / vls as u32)
    }
}

/// An id that numbers the elements of one [`IdVec`].
pub trait Id: Copy {
    /// The element's position.
    fn idx(self) -> usize;
    /// The id of position `i`.
    fn from_idx(i: usize) -> Self;
}

macro_rules! impl_id {
    ($($t:ident),*) => {$(
        impl Id for $t {
            #[inline(always)]
            fn idx(self) -> usize {
                self.0 as usize
            }
            #[inline(always)]
            fn from_idx(i: usize) -> Self {
                debug_assert!(i < u32::MAX as usize);
                $t(i as u32)
            }
        }
    )*};
}
impl_id!(PortId, PktIdx, QpId, LaneIdx);

/// A vector indexed by one kind of id only: `ports[port_id]` compiles,
/// `ports[pkt_idx]` does not. A plain `Vec` inside (the layout stays flat);
/// indexing is the `Vec`'s, bounds check included.
pub struct IdVec<I, T> {
    v: Vec<T>,
    _id: std::marker::PhantomData<fn(I) -> I>,
}

impl<I: Id, T> IdVec<I, T> {
    /// Wraps `v`: element `i` gets id `I::from_idx(i)`.
    pub fn from_vec(v: Vec<T>) -> Self {
        IdVec {
            v,
            _id: std::marker::PhantomData,
        }
    }
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.v.len()
    }
    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    /// Appends `x` and returns its id.
    #[inline]
    pub fn push(&mut self, x: T) -> I {
        self.v.push(x);
        I::from_idx(self.v.len() - 1)
    }
    /// The elements in id order.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.v.iter()
    }
    /// The elements in id order, mutably.
    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.v.iter_mut()
    }
    /// The elements as a slice, position = id.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.v
    }
    /// (id, element) in id order.
    pub fn iter_ids(&self) -> impl Iterator<Item = (I, &T)> {
        self.v.iter().enumerate().map(|(i, x)| (I::from_idx(i), x))
    }
    /// Every id, in order.
    pub fn ids(&self) -> impl Iterator<Item = I> {
        (0..self.v.len()).map(I::from_idx)
    }
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec {
            v: Vec::new(),
            _id: std::marker::PhantomData,
        }
    }
}

impl<I: Id, T> std::ops::Index<I> for IdVec<I, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: I) -> &T {
        &self.v[i.idx()]
    }
}

impl<I: Id, T> std::ops::IndexMut<I> for IdVec<I, T> {
    #[inline(always)]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.v[i.idx()]
    }
}

impl<I: Id, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(it: It) -> Self {
        IdVec::from_vec(it.into_iter().collect())
    }
}

impl<'a, I: Id, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter()
    }
}

impl<'a, I: Id, T> IntoIterator for &'a mut IdVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter_mut()
    }
}
