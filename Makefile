# quiche-cr entry points. `make test` is what CI runs.
SHELL := /bin/bash
CARGO ?= cargo
FORK := quiche/fork.sh
FUZZ_SECONDS ?= 20
export FUZZ_SECONDS

.PHONY: all setup setup-test setup-fuzz quiche quiche-export quiche-check quiche-tooling-test quiche-test sim-guards release-loopback package-check doc-check build fmt fmt-check clippy \
        test test-workspace bench demo fuzz fuzz-seeds

all: build

## setup: install what building quiche needs (cmake, libclang-dev, curl) and the Redis guard's tests (redis-server) when missing
setup:
	@scripts/setup-deps.sh

## setup-fuzz: setup, plus the nightly toolchain check and cargo-fuzz
setup-fuzz:
	@scripts/setup-deps.sh fuzz

## setup-test: the set-up script's own detection tests, on fake machines
setup-test:
	@scripts/test-setup-deps.sh

## quiche: materialise quiche/patched/ (pinned release + quiche/patches/) and upstream's examples with Careful Resume (endpoint/examples/*.diff); idempotent
quiche:
	@$(FORK) materialise
	@scripts/upstream-examples.sh materialise

## quiche-export: write quiche/patched/'s commits back to quiche/patches/
quiche-export:
	@$(FORK) export

## quiche-check: fail when quiche/patched/ holds work not exported, or the series does not apply
quiche-check:
	@$(FORK) check

## quiche-tooling-test: tests of the fork tooling itself, on a scratch copy
quiche-tooling-test:
	@quiche/test-fork.sh

## quiche-test: upstream quiche's own test suite on the patched tree
quiche-test: setup
	@$(FORK) test

build: setup quiche
	$(CARGO) build --workspace --all-targets

fmt:
	$(CARGO) fmt

fmt-check:
	$(CARGO) fmt --check

clippy: setup quiche
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-workspace: setup quiche
	$(CARGO) test --workspace

## sim-guards: the simulator's release-only guards (the whole suite against its baselines, wall time; sampled sweeps of paths, sizes, loss and outages)
sim-guards: setup quiche
	$(CARGO) test --release -p cr-sim --test targets --test session --test sweeps --test bottlenecks

## test: formatting, lints, all workspace tests, the fork check, upstream's suite, a short fuzz run
## release-loopback: the tests that run real connections over loopback (tokio-quiche, interop, cr-server's programs), against release builds: a path only a fast handshake takes (one loopback round trip well under a millisecond) shows in release and not in debug
.PHONY: release-loopback
release-loopback: setup quiche
	$(CARGO) test --release -p quiche-cr-tests --test tokio_quiche --test interop --test stateless_reset
	$(CARGO) test --release -p cr-apps --test loopback --test restart --test fleet

## package-check: the library crates a registry would take (careful-resume, ex-token, qlog-cr) package and build on their own
.PHONY: package-check doc-check
package-check:
	$(CARGO) package --allow-dirty --quiet -p careful-resume -p ex-token -p qlog-cr

## doc-check: the workspace's documentation builds without a warning (broken links, undocumented public items)
doc-check: setup quiche
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --quiet

test: setup-test fmt-check clippy test-workspace sim-guards release-loopback package-check doc-check quiche-check quiche-tooling-test quiche-test fuzz

## bench: criterion benchmarks (results in target/criterion); the Redis guard's claims/s and latency; server CPU and packets per MiB (loopback_cost)
bench: setup quiche
	$(CARGO) bench -p quiche-cr-benches
	$(CARGO) bench -p cr-guard-redis
	$(CARGO) bench -p cr-apps --bench loopback_cost

## results: run the simulator's suite and rewrite the figures README.md and docs/results.md quote from it (the blocks between `<!-- cr-sim results: NAME -->` and `<!-- /cr-sim results -->`); make sim-guards fails when a committed block differs from what the code gives
.PHONY: results
results: setup quiche
	$(CARGO) run --release -p cr-sim -- results README.md docs/results.md

## demo: Careful Resume on a simulated GEO satellite link: times, speed-ups, SVG plots (target/cr-demo/)
demo: setup quiche
	$(CARGO) run --release -p cr-sim -- demo

## satellite: 100 MB over 600 ms at 250, 50 and 10 Mbit/s, 0 % and 1 % loss, first and resumed, CUBIC, Reno and BBR2, beside picoquic's published bounds (minutes; not part of make test)
.PHONY: satellite
satellite: setup quiche
	$(CARGO) run --release -p cr-sim -- satellite

## interop-clients: unmodified quic-go and aioquic (from the registries) download 2 MiB three times through cr-relay (first, resumed with the request in 1-RTT, resumed with it in 0-RTT); fails unless both resumed connections engage Careful Resume and the server accepts the 0-RTT one's early data (not part of make test)
.PHONY: interop-clients
interop-clients: setup quiche
	@scripts/interop/run.sh

## interop-browser: an unmodified headless Chromium (Debian's chromium and chromium-driver, installed when missing) fetches 4 KiB, then 2 MiB twice from cr-server through cr-relay (20 Mbit/s, 300 ms) in one browser process; fails unless the second 2 MiB presented a token, engaged Careful Resume and was >= 1.5x faster than the first (not part of make test)
.PHONY: interop-browser
interop-browser: setup quiche
	@scripts/setup-deps.sh browser
	@scripts/interop-browser.py

## fuzz: run each cargo-fuzz target for FUZZ_SECONDS (default 20; FUZZ_RUNS caps executions)
fuzz: setup-fuzz
	@scripts/fuzz.sh

## fuzz-seeds: rewrite the committed seed corpus (fuzz/seeds/) after a format change
fuzz-seeds: setup-fuzz
	cd fuzz && $(CARGO) +nightly run --example write_seeds

## coverage: line coverage of our crates over every workspace test (cargo-tarpaulin's LLVM engine, built in target/coverage/): a table per crate, the HTML report in target/coverage/report/ (not part of make test)
.PHONY: coverage mutants setup-coverage setup-mutants
setup-coverage:
	@scripts/setup-deps.sh coverage

coverage: setup-coverage quiche
	@scripts/coverage.sh

## mutants: mutation testing (cargo-mutants) of careful-resume, ex-token and the guards; caught, missed and timed-out mutants per crate, exclusions in .cargo/mutants.toml (not part of make test)
setup-mutants:
	@scripts/setup-deps.sh mutants

mutants: setup-mutants
	@scripts/mutants.sh

## load: cr-load, 200 clients (each on a loopback /24 of its own, with its own token file) downloading 256 KiB again and again for 60 s from a release cr-server through the relay (100 Mbit/s, 50 ms, 4 MiB queues), every body byte checked; one JSON line: failures, bytes verified, p50/p99, the server's peak RSS and CPU s per MB (not part of make test)
.PHONY: load load-probe
LOAD_ARGS ?= --clients 200 --duration 60s --size 256KiB --rate 100mbit --rtt 50ms --queue 4MiB --linger 500ms
load: setup quiche
	$(CARGO) build --release -p cr-apps
	$(CARGO) run --release -q -p cr-apps --bin cr-load -- $(LOAD_ARGS)

## load-probe: a flash crowd on real sockets: ten clients (each on a /24 of its own) each fetch 2 MiB alone, one after another, over a 50 Mbit/s, 300 ms path through the relay, then all ten at once presenting their tokens (arm resume) and without (baseline), cr-server's default jump budget; one JSON line per arm (not part of make test)
load-probe: setup quiche
	$(CARGO) build --release -p cr-apps
	$(CARGO) run --release -q -p cr-apps --bin cr-load -- --probe --clients 10 --size 2MiB --rate 50mbit --rtt 300ms

## soak: cr-load --soak for 10 minutes: 20 clients download 256 KiB again and again through the relay (50 Mbit/s, 50 ms) from a release cr-server on a redis-server of its own, while five rounds of faults hit them: a 30 % loss burst, Redis killed and restarted, the token key ring rotated, cr-server killed and restarted, a flood of garbage and forged Initials (2,000/s); one JSON line per fault window and a summary; fails unless no download was lost, no saved set used twice, no client stalled over 10 s (not part of make test)
.PHONY: soak soak-short
SOAK_ARGS ?= --soak --clients 20 --size 256KiB --rate 50mbit --rtt 50ms --queue 1MiB --linger 500ms --flood-rate 2000
soak: setup quiche
	$(CARGO) build --release -p cr-apps
	$(CARGO) run --release -q -p cr-apps --bin cr-load -- $(SOAK_ARGS) --duration 10min

## soak-short: the same for 2 minutes, each fault once
soak-short: setup quiche
	$(CARGO) build --release -p cr-apps
	$(CARGO) run --release -q -p cr-apps --bin cr-load -- $(SOAK_ARGS) --duration 2min
