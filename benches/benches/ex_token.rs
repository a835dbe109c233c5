//! Token hot paths: decode (client and server), encode, mint, validate.

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion};
use ex_token::{
    ExToken, KeyRing, MemoryGuard, SavedPath, ServerConfig, SimRng, TokenKey, TokenServer,
};

fn server() -> TokenServer<SimRng> {
    let key = TokenKey::from_bytes(1, &[7; 32]).expect("32-byte key");
    TokenServer::new(KeyRing::new(key), SimRng::new(1), ServerConfig::default())
}

const SAVED: SavedPath<'static> = SavedPath {
    capacity: 1_250_000,
    rtt: Duration::from_millis(600),
    extras: b"",
};

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn bench_tokens(c: &mut Criterion) {
    let mut server = server();
    let client = "192.0.2.1:4433".parse().expect("address");
    let token = server
        .new_saved_set(client, now())
        .and_then(|set| server.mint_bdp_token(client, &SAVED, &set))
        .expect("mint");

    c.bench_function("ex_token/decode", |b| {
        b.iter(|| {
            let t = ExToken::decode(black_box(&token)).expect("decode");
            black_box(t.bdp())
        })
    });

    let decoded = ExToken::decode(&token).expect("decode");
    c.bench_function("ex_token/encode", |b| {
        b.iter(|| black_box(&decoded).to_vec())
    });

    c.bench_function("ex_token/mint_bdp", |b| {
        let set = server.new_saved_set(client, now()).expect("set");
        b.iter(|| server.mint_bdp_token(black_box(client), &SAVED, &set))
    });

    // Each iteration gets a fresh guard, built outside the timing, so the
    // claim succeeds and validation does all of its work.
    c.bench_function("ex_token/validate", |b| {
        b.iter_batched_ref(
            || MemoryGuard::new(1),
            |guard| server.validate(black_box(&token), client, now(), guard),
            criterion::BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench_tokens);
criterion_main!(benches);
