//! [`fuzz`]: runs one target's property over generated inputs, counts them,
//! and says so; [`Target`] names it and decides how many inputs it gets.

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};

/// The environment variable that sets every target's input count at once
/// (proptest's own; a target's own variable wins over it).
pub const CASES_VARIABLE: &str = "PROPTEST_CASES";

/// Set (to anything) to fail on [`KnownFault`]s too: to check that a fix
/// for one landed, or that a target still finds it.
pub const STRICT_VARIABLE: &str = "TOOLGATE_FUZZ_STRICT";

/// One fuzz target: a name (its own case-count variable is
/// `TOOLGATE_FUZZ_CASES_<NAME>`, upper case) and how many inputs it gets in
/// the normal test suite.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The target's name, `snake_case`.
    pub name: &'static str,
    /// Inputs per run when no variable says otherwise.
    pub default_cases: u32,
}

impl Target {
    /// A target run `default_cases` times unless the environment says otherwise.
    pub const fn new(name: &'static str, default_cases: u32) -> Self {
        Self {
            name,
            default_cases,
        }
    }

    /// The variable holding this target's own input count.
    pub fn variable(&self) -> String {
        format!("TOOLGATE_FUZZ_CASES_{}", self.name.to_ascii_uppercase())
    }

    /// Inputs for this run: the target's own variable, else
    /// [`CASES_VARIABLE`], else the default. A value that is not a number is
    /// an error, not silently the default.
    pub fn cases(&self) -> u32 {
        let own = self.variable();
        for variable in [own.as_str(), CASES_VARIABLE] {
            if let Ok(text) = std::env::var(variable) {
                return text
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{variable}={text:?} is not a number of inputs"));
            }
        }
        self.default_cases
    }
}

/// A fault a target knows about and tolerates until its fix lands
/// elsewhere, told by its panic message: a panic of the code under test,
/// or one the property raises with [`KnownFault::found`] for a known wrong
/// result. The input still counts, the fault is counted apart and
/// reported, and any other panic or failure still fails the target.
#[derive(Clone, Copy, Debug)]
pub struct KnownFault {
    /// Text the panic message contains.
    pub message: &'static str,
    /// Why it is tolerated, for the report.
    pub why: &'static str,
}

impl KnownFault {
    /// Reports this fault from a property: panics with its message and
    /// `detail`, which [`fuzz`] counts when the fault is among its known
    /// ones (and fails the target with otherwise).
    pub fn found(&self, detail: impl std::fmt::Display) -> ! {
        panic!("{}: {detail}", self.message)
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    /// Inputs the property ran on.
    pub inputs: u64,
    /// Inputs that hit each [`KnownFault`] given, in order.
    pub known_faults: Vec<u64>,
}

/// Runs `property` on `target.cases()` inputs from `strategy`, and prints
/// one line to stderr: `fuzz <target>: <inputs> inputs, <known> known
/// faults, <seconds> s (seed <seed>)` (`scripts/fuzz` adds them up). A
/// property that fails or panics (but for one of `known`) fails the test
/// with the smallest input proptest shrank it to; one input running longer
/// than [`HANG_VARIABLE`] seconds (60 by default) ends the process as a
/// hang. `PROPTEST_RNG_SEED=<seed>` replays a run's inputs.
pub fn fuzz<S, F>(target: Target, strategy: S, known: &[KnownFault], property: F) -> Tally
where
    S: Strategy,
    S::Value: Debug,
    F: Fn(S::Value) -> Result<(), TestCaseError>,
{
    let known = if std::env::var_os(STRICT_VARIABLE).is_some() {
        &[]
    } else {
        known
    };
    quiet_known_faults(known);
    let defaults = Config::default();
    let seed = match defaults.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => random_seed(),
    };
    let config = Config {
        cases: target.cases(),
        // Inputs are cheap to make again; a run of millions should not
        // write a file per failure into the source tree.
        failure_persistence: None,
        // Faster than the default ChaCha, and fuzzing needs no more.
        rng_algorithm: RngAlgorithm::XorShift,
        rng_seed: RngSeed::Fixed(seed),
        ..defaults
    };
    let inputs = AtomicU64::new(0);
    let known_faults: Vec<AtomicU64> = known.iter().map(|_| AtomicU64::new(0)).collect();
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let result = std::thread::scope(|scope| {
        let watchdog = scope.spawn(|| watch(target, seed, &inputs, &done));
        let mut runner = TestRunner::new(config);
        let result = runner.run(&strategy, |input| {
            inputs.fetch_add(1, Ordering::Relaxed);
            match catch_unwind(AssertUnwindSafe(|| property(input))) {
                Ok(outcome) => outcome,
                Err(payload) => {
                    let message = panic_message(payload.as_ref());
                    if let Some(index) = known.iter().position(|k| message.contains(k.message)) {
                        known_faults[index].fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    } else {
                        Err(TestCaseError::fail(format!("panicked: {message}")))
                    }
                }
            }
        });
        done.store(true, Ordering::Relaxed);
        watchdog.thread().unpark();
        result
    });
    let tally = Tally {
        inputs: inputs.load(Ordering::Relaxed),
        known_faults: known_faults
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect(),
    };
    report(target, &tally, started.elapsed().as_secs_f64(), seed, known);
    match result {
        Ok(()) => tally,
        Err(TestError::Fail(reason, input)) => panic!(
            "fuzz target {}: {reason}\nminimal input: {input:#?}\nreplay: PROPTEST_RNG_SEED={seed}",
            target.name
        ),
        Err(TestError::Abort(reason)) => panic!("fuzz target {}: {reason}", target.name),
    }
}

/// The variable holding how many seconds one input may run before the
/// target counts as hung (default 60).
pub const HANG_VARIABLE: &str = "TOOLGATE_FUZZ_HANG_SECONDS";

/// Ends the process when one input runs too long: a hang would otherwise
/// look like a slow run for ever.
fn watch(target: Target, seed: u64, inputs: &AtomicU64, done: &AtomicBool) {
    let limit = std::env::var(HANG_VARIABLE)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(60.0_f64);
    let mut last = inputs.load(Ordering::Relaxed);
    let mut since = Instant::now();
    while !done.load(Ordering::Relaxed) {
        std::thread::park_timeout(Duration::from_millis(500));
        let now = inputs.load(Ordering::Relaxed);
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed().as_secs_f64() > limit && !done.load(Ordering::Relaxed) {
            hung(target, now, limit, seed);
        }
    }
}

/// Says so on the process's stderr (not the test's captured output, which
/// exiting throws away) and exits.
fn hung(target: Target, input: u64, limit: f64, seed: u64) -> ! {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "fuzz {}: input {input} has run for over {limit} s: a hang. \
         Replay: PROPTEST_RNG_SEED={seed} {}={input}",
        target.name,
        target.variable()
    );
    std::process::exit(101)
}

/// A seed for a run nobody gave one: different each run, printed with the
/// summary so a run can be replayed.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(Instant::now())
}

#[expect(
    clippy::print_stderr,
    reason = "the run's summary, read by scripts/fuzz"
)]
fn report(target: Target, tally: &Tally, seconds: f64, seed: u64, known: &[KnownFault]) {
    eprintln!(
        "fuzz {}: {} inputs, {} known faults, {seconds:.1} s (seed {seed})",
        target.name,
        tally.inputs,
        tally.known_faults.iter().sum::<u64>()
    );
    for (fault, count) in known.iter().zip(&tally.known_faults) {
        if *count > 0 {
            eprintln!(
                "  known fault in {}, {count} inputs: \"{}\": {}",
                target.name, fault.message, fault.why
            );
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}

/// Messages of known faults the panic hook keeps quiet: millions of inputs
/// would otherwise print millions of backtraces nobody needs.
static QUIET: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn quiet_known_faults(known: &[KnownFault]) {
    static HOOK: Once = Once::new();
    if known.is_empty() {
        return;
    }
    QUIET
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(known.iter().map(|k| k.message));
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let quiet = QUIET
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|known| message.contains(known));
            if !quiet {
                previous(info);
            }
        }));
    });
}
