//! The layer's own host memory through the application's `VkAllocationCallbacks`
//! (docs/layer.md, "Host memory").
//!
//! The Vulkan spec has the implementation (which a layer is part of) make its host allocations
//! through the most specific allocator available: for memory scoped to a command, the callbacks
//! of the object the command creates, else its device's, else its instance's, with
//! `VK_SYSTEM_ALLOCATION_SCOPE_COMMAND`; for a device's or instance's own state, that object's
//! callbacks with `_DEVICE`/`_INSTANCE`. Everything the layer allocates is Rust's (its state, the
//! lowering's temporaries, the lowered modules), so the library's global allocator does it:
//!
//! - A thread-local *route* says where this thread's allocations go now: the application's
//!   callbacks with a scope, or the system allocator. Entry points set it for their extent and
//!   for the parts of it that build longer-lived state ([`with_route`]); outside a route (and
//!   while a panic unwinds) allocations go to the system allocator.
//! - Every block carries a header just before the pointer handed out: the `pfnFree` and
//!   `pUserData` that made it, or none for a system block. A free goes back to the allocator
//!   that made the block whatever the route is then, so a block may outlive the call it was
//!   made in (a device's cache lives as long as the device) and a `Vec` may grow under another
//!   route than the one it was made under.
//! - A NULL from `pfnAllocation` cannot be returned to Rust (its collections abort the process
//!   on a failed allocation), so the block is taken from the system allocator instead and the
//!   thread remembers the failure; the entry point then undoes what it did and returns
//!   `VK_ERROR_OUT_OF_HOST_MEMORY` ([`take_failure`]), as the spec asks of a NULL.
//!
//! What the routes hold must outlive the application's callbacks only as long as the spec lets
//! it: the callers make each route's memory belong to the object whose callbacks it uses, and
//! the dispatch maps' tables, which belong to no object, are made under no route (and freed
//! with the last entry: nothing outlives the library's last instance, `dispatch.rs`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use ash::vk;

/// The two callbacks a block needs, copied from the application's `VkAllocationCallbacks` (the
/// struct itself may live only as long as the call that passed it).
#[derive(Clone, Copy, Debug)]
pub struct Callbacks {
    user_data: *mut c_void,
    allocation: unsafe extern "system" fn(
        *mut c_void,
        usize,
        usize,
        vk::SystemAllocationScope,
    ) -> *mut c_void,
    free: unsafe extern "system" fn(*mut c_void, *mut c_void),
}

// SAFETY: the spec lets the callbacks be called from any thread (the application makes them
// thread-safe); `user_data` is the application's, passed back to them and never read here.
unsafe impl Send for Callbacks {}
// SAFETY: as above.
unsafe impl Sync for Callbacks {}

impl Callbacks {
    /// The callbacks of the application's `allocator`, or `None` for NULL (or a struct without
    /// `pfnAllocation`/`pfnFree`, which valid usage forbids: the system allocator then).
    ///
    /// # Safety
    /// `allocator` is NULL or a valid `VkAllocationCallbacks` whose functions stay callable as
    /// long as the spec says (until the object it was given for is destroyed).
    pub unsafe fn from_app(allocator: *const vk::AllocationCallbacks) -> Option<Callbacks> {
        if allocator.is_null() {
            return None;
        }
        // SAFETY: a valid struct, read once.
        let a = unsafe { &*allocator };
        Some(Callbacks {
            user_data: a.p_user_data,
            allocation: a.pfn_allocation?,
            free: a.pfn_free?,
        })
    }

    /// These callbacks with `scope`.
    pub fn scope(self, scope: vk::SystemAllocationScope) -> Route {
        Route {
            callbacks: self,
            scope,
        }
    }
}

/// Where allocations go: callbacks and the scope they are told.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    callbacks: Callbacks,
    scope: vk::SystemAllocationScope,
}

thread_local! {
    /// This thread's route (`None`: the system allocator). No destructor and a constant
    /// initializer: reading it from the allocator never allocates.
    static ROUTE: Cell<Option<Route>> = const { Cell::new(None) };
    /// Whether a callback returned NULL since [`take_failure`] last looked.
    static FAILED: Cell<bool> = const { Cell::new(false) };
}

/// How many blocks the application's callbacks gave the layer, for the `info` log.
static FROM_CALLBACKS: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` with this thread's allocations going to `route` (`None`: the system allocator),
/// then restores the route before (also when `f` panics).
pub fn with_route<R>(route: Option<Route>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Route>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ROUTE.set(self.0);
        }
    }
    let _restore = Restore(ROUTE.replace(route));
    f()
}

/// Whether a callback returned NULL on this thread since the last call (and forgets it).
pub fn take_failure() -> bool {
    FAILED.replace(false)
}

/// How many blocks the application's callbacks have given the layer in this process.
pub fn blocks_from_callbacks() -> usize {
    FROM_CALLBACKS.load(Ordering::Relaxed)
}

/// What precedes every block the layer hands out.
#[repr(C)]
struct Header {
    /// The `pfnFree` that frees the block, `None` for a system block.
    free: Option<unsafe extern "system" fn(*mut c_void, *mut c_void)>,
    /// Its `pUserData`.
    user_data: *mut c_void,
}

const HEADER: usize = std::mem::size_of::<Header>();

/// The layout of the whole block for a request of `layout`, and where the pointer handed out
/// sits in it: the header needs 16 bytes, so the block is aligned to at least 16 and the
/// request starts at the block's alignment (a multiple of 16), the header just before it.
fn block_layout(layout: Layout) -> Option<(Layout, usize)> {
    let align = layout.align().max(HEADER);
    let size = layout.size().checked_add(align)?;
    Some((Layout::from_size_align(size, align).ok()?, align))
}

/// The layer's global allocator (installed in `lib.rs`).
#[derive(Debug)]
pub struct Router;

impl Router {
    /// Writes the header of the block at `base` and returns the pointer handed out.
    ///
    /// # Safety
    /// `base` is a block of `block_layout(..)` with `offset` as its second value.
    unsafe fn finish(base: *mut u8, offset: usize, header: Header) -> *mut u8 {
        // SAFETY: the block is at least `offset + size` bytes, `offset >= HEADER`, and
        // `base + offset - HEADER` is 8-byte aligned (`base` and `offset` are multiples of 16).
        unsafe {
            let ptr = base.add(offset);
            ptr.sub(HEADER).cast::<Header>().write(header);
            ptr
        }
    }
}

// SAFETY: every block is at least `layout.size()` bytes at an address aligned to
// `layout.align()` (the block's alignment is a multiple of it, and the offset too); a block is
// freed by the allocator its header names, with the layout it was made with.
unsafe impl GlobalAlloc for Router {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some((block, offset)) = block_layout(layout) else {
            return std::ptr::null_mut();
        };
        // While a panic unwinds, the panic machinery's own allocations (its message, lazily
        // built state it keeps) go to the system allocator: they belong to no object.
        let route = if std::thread::panicking() {
            None
        } else {
            ROUTE.get()
        };
        if let Some(route) = route {
            let c = route.callbacks;
            // The callback runs under no route (were it ever Rust code sharing this allocator,
            // its own allocations must not come back here).
            let base = with_route(None, || {
                // SAFETY: the application's allocation callback, with a size and a power-of-two
                // alignment (the spec's contract).
                unsafe { (c.allocation)(c.user_data, block.size(), block.align(), route.scope) }
            })
            .cast::<u8>();
            if !base.is_null() {
                FROM_CALLBACKS.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the callback returned at least `block.size()` bytes aligned to
                // `block.align()` (the spec's contract for a non-NULL result).
                return unsafe {
                    Router::finish(
                        base,
                        offset,
                        Header {
                            free: Some(c.free),
                            user_data: c.user_data,
                        },
                    )
                };
            }
            // NULL: the entry point answers VK_ERROR_OUT_OF_HOST_MEMORY; the block comes from
            // the system, so that nothing aborts on the way there.
            FAILED.set(true);
        }
        // SAFETY: a non-zero size (at least the alignment).
        let base = unsafe { System.alloc(block) };
        if base.is_null() {
            return base;
        }
        // SAFETY: a system block of `block`.
        unsafe {
            Router::finish(
                base,
                offset,
                Header {
                    free: None,
                    user_data: std::ptr::null_mut(),
                },
            )
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some((block, offset)) = block_layout(layout) else {
            return;
        };
        // SAFETY: `ptr` was handed out by `alloc` for `layout` (GlobalAlloc's contract), so the
        // header precedes it and the block starts `offset` bytes before it.
        unsafe {
            let header = ptr.sub(HEADER).cast::<Header>().read();
            let base = ptr.sub(offset);
            match header.free {
                Some(free) => free(header.user_data, base.cast()),
                None => System.dealloc(base, block),
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A system block under no route grows in place where the system allocator can; any
        // other moves: a new block under the current route, the bytes copied, the old freed by
        // its own allocator.
        // SAFETY: as in `dealloc`.
        let system_block = unsafe { ptr.sub(HEADER).cast::<Header>().read() }
            .free
            .is_none();
        if system_block && ROUTE.get().is_none() && !std::thread::panicking() {
            if let (Some((block, offset)), Ok(new)) = (
                block_layout(layout),
                Layout::from_size_align(new_size, layout.align()),
            ) {
                if let Some((new_block, _)) = block_layout(new) {
                    // SAFETY: a system block of `block`; the header moves with the bytes.
                    let base = unsafe { System.realloc(ptr.sub(offset), block, new_block.size()) };
                    // SAFETY: the same offset in the moved block.
                    return if base.is_null() {
                        base
                    } else {
                        unsafe { base.add(offset) }
                    };
                }
            }
        }
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a valid layout of non-zero size (GlobalAlloc's contract for realloc).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks hold at least the smaller size; they do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A test allocator: counts live blocks per scope and fails when told to.
    #[derive(Default)]
    struct Counter {
        live: Mutex<HashMap<usize, (Layout, i32)>>,
        fail: std::sync::atomic::AtomicBool,
        foreign_frees: AtomicUsize,
    }

    unsafe extern "system" fn test_alloc(
        user: *mut c_void,
        size: usize,
        align: usize,
        scope: vk::SystemAllocationScope,
    ) -> *mut c_void {
        // SAFETY (test): `user` is the `Counter` of the test.
        let counter = unsafe { &*(user as *const Counter) };
        if counter.fail.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        let layout = Layout::from_size_align(size, align).expect("a valid request");
        // SAFETY (test): a non-zero size. (The router calls this under no route, so the map's
        // own allocations below are system blocks.)
        let p = unsafe { System.alloc(layout) };
        counter
            .live
            .lock()
            .unwrap()
            .insert(p as usize, (layout, scope.as_raw()));
        p.cast()
    }

    unsafe extern "system" fn test_free(user: *mut c_void, p: *mut c_void) {
        // SAFETY (test): as above.
        let counter = unsafe { &*(user as *const Counter) };
        if p.is_null() {
            return;
        }
        let entry = counter.live.lock().unwrap().remove(&(p as usize));
        match entry {
            // SAFETY (test): a block this counter made with `layout`.
            Some((layout, _)) => unsafe { System.dealloc(p.cast(), layout) },
            None => {
                counter.foreign_frees.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn callbacks(counter: &Counter) -> Callbacks {
        let app = vk::AllocationCallbacks {
            p_user_data: (counter as *const Counter).cast_mut().cast(),
            pfn_allocation: Some(test_alloc),
            pfn_free: Some(test_free),
            ..Default::default()
        };
        // SAFETY (test): a valid struct whose functions live as long as the test.
        unsafe { Callbacks::from_app(&app) }.expect("both callbacks")
    }

    #[test]
    fn blocks_made_under_a_route_go_back_to_its_callbacks_wherever_they_are_freed() {
        let counter = Counter::default();
        let route = callbacks(&counter).scope(vk::SystemAllocationScope::DEVICE);
        // Made under the route, grown and dropped outside it.
        let mut kept: Vec<u64> = with_route(Some(route), || vec![1, 2, 3]);
        assert!(!take_failure());
        {
            let live = counter.live.lock().unwrap();
            assert_eq!(live.len(), 1);
            assert!(live.values().all(|(layout, scope)| {
                *scope == vk::SystemAllocationScope::DEVICE.as_raw() && layout.align() >= 16
            }));
        }
        kept.extend(0..1000);
        // It moved to a system block: the callbacks' block is freed through them.
        assert!(counter.live.lock().unwrap().is_empty());
        // Made outside, grown and dropped under the route: a callback block, then freed.
        let mut outside: Vec<u8> = Vec::with_capacity(4);
        with_route(Some(route), || {
            outside.extend_from_slice(&[7; 100]);
            assert_eq!(counter.live.lock().unwrap().len(), 1);
            drop(outside);
        });
        assert!(counter.live.lock().unwrap().is_empty());
        assert_eq!(counter.foreign_frees.load(Ordering::Relaxed), 0);
        assert_eq!(kept.len(), 1003);
        // Over-aligned requests keep their alignment through the header.
        #[repr(align(64))]
        struct Wide([u8; 64]);
        let wide = with_route(Some(route), || Box::new(Wide([5; 64])));
        assert_eq!((&*wide as *const Wide as usize) % 64, 0);
        assert_eq!(wide.0[63], 5);
        drop(wide);
        assert!(counter.live.lock().unwrap().is_empty());
    }

    #[test]
    fn a_null_from_the_callbacks_is_a_system_block_and_a_remembered_failure() {
        let counter = Counter::default();
        counter.fail.store(true, Ordering::Relaxed);
        let route = callbacks(&counter).scope(vk::SystemAllocationScope::COMMAND);
        assert!(!take_failure());
        let v: Vec<u32> = with_route(Some(route), || (0..100).collect());
        assert_eq!(v.iter().sum::<u32>(), 4950);
        assert!(take_failure(), "the failure is remembered");
        assert!(!take_failure(), "and forgotten once taken");
        drop(v);
        assert_eq!(counter.foreign_frees.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn routes_nest_and_are_restored_after_a_panic() {
        let counter = Counter::default();
        let route = callbacks(&counter).scope(vk::SystemAllocationScope::INSTANCE);
        with_route(Some(route), || {
            with_route(None, || {
                let b = Box::new(1u8);
                assert!(counter.live.lock().unwrap().is_empty(), "a system block");
                drop(b);
            });
            let b = Box::new(2u8);
            assert_eq!(counter.live.lock().unwrap().len(), 1);
            drop(b);
        });
        let caught = std::panic::catch_unwind(|| {
            with_route(Some(route), || panic!("a bug"));
        });
        assert!(caught.is_err());
        assert!(ROUTE.get().is_none());
        // The panic's own allocations went to the system allocator.
        assert!(counter.live.lock().unwrap().is_empty());
    }
}
