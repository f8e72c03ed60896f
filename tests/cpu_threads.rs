//! The CPU thread count: the process-wide setting (Rust and C), a handle's
//! own count, refusals of garbage counts that change nothing. One test
//! function, since the setting is process-wide and tests run concurrently.
mod common;

use common::last_error;
use kernpack::ffi::kp_status;
use kernpack::ffi::threads::{kp_get_cpu_threads, kp_set_cpu_threads};
use kernpack::{cpu, Backend, Error, Kernpack};

#[test]
fn the_thread_count_is_set_read_and_refused_when_garbage() {
    let default = cpu::threads();
    assert!(default >= 1);

    cpu::set_threads(3).unwrap();
    assert_eq!(cpu::threads(), 3);
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    assert_eq!(
        kp.cpu_threads(),
        3,
        "a handle without its own count follows the setting"
    );
    let own = kp.clone().with_cpu_threads(5).unwrap();
    assert_eq!(own.cpu_threads(), 5);
    assert_eq!(kp.cpu_threads(), 3);
    match Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(1 << 40)
    {
        Err(Error::InvalidInput(msg)) => assert!(msg.contains("4096"), "{msg}"),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert!(matches!(
        cpu::set_threads(usize::MAX),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(cpu::threads(), 3, "a refused count changed the setting");

    // The C ABI sees and sets the same value.
    let mut n = 0usize;
    assert_eq!(unsafe { kp_get_cpu_threads(&mut n) }, kp_status::KP_OK);
    assert_eq!(n, 3);
    assert_eq!(kp_set_cpu_threads(2), kp_status::KP_OK);
    assert_eq!(cpu::threads(), 2);
    assert_eq!(
        kp_set_cpu_threads(4097),
        kp_status::KP_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("4097"), "{}", last_error());
    assert_eq!(cpu::threads(), 2);
    assert_eq!(
        unsafe { kp_get_cpu_threads(std::ptr::null_mut()) },
        kp_status::KP_ERROR_NULL_POINTER
    );
    assert!(last_error().contains("threads"));

    assert_eq!(kp_set_cpu_threads(0), kp_status::KP_OK);
    assert_eq!(cpu::threads(), default, "0 restores the default");
}
