RUST_TEST_THREADS=1 cargo test --offline
