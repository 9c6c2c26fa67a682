//! What the gateway counts for its operators, in one place: turns by outcome, the time to
//! the first visible answer, edits and rate-limited requests, polls by outcome, queued
//! prompts, agent restarts, caught-up and missed events, sync errors, and whether each
//! agent has synced. Served in the Prometheus/OpenMetrics text format by `app` (see
//! `docs/operations.md`). The counters are process-wide ([`metrics`]); every series is
//! labelled with the agent.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::model::ids::AgentId;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};

/// A series of one agent.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByAgent {
    /// The agent's configured ID.
    agent: String,
}

/// A series of one agent and one outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByOutcome {
    /// The agent's configured ID.
    agent: String,
    /// How it ended.
    outcome: String,
}

/// A series of one webhook and one outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByWebhook {
    /// The webhook's name.
    webhook: String,
    /// What became of the request.
    outcome: String,
}

/// A series of one agent and one unit of spend (a currency's code, or `tokens`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ByUnit {
    /// The agent's configured ID.
    agent: String,
    /// The currency's code, or `tokens`.
    unit: String,
}

/// A counter of amounts that need not be whole (a currency's cents).
type Amounts = Family<ByUnit, Counter<f64, std::sync::atomic::AtomicU64>>;

/// Buckets of the time to the first visible answer, in seconds.
const ANSWER_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// Every metric the gateway keeps.
pub struct Metrics {
    /// Where they are registered, for encoding.
    registry: Registry,
    /// Turns by how they ended (`end_turn`, `cancelled`, `error`, …).
    turns: Family<ByOutcome, Counter>,
    /// Seconds from a message being sent to the first message of its answer in the room.
    first_answer: Family<ByAgent, Histogram>,
    /// Messages posted for answers.
    answer_posts: Family<ByAgent, Counter>,
    /// Edits of answers.
    edits: Family<ByAgent, Counter>,
    /// Requests the homeserver refused with a rate limit.
    rate_limited: Family<ByAgent, Counter>,
    /// Permission polls and questions by how they ended (`answered`, `expired`, …).
    polls: Family<ByOutcome, Counter>,
    /// Prompts waiting behind a running turn.
    queued: Family<ByAgent, Gauge>,
    /// Agent processes started again after they crashed.
    restarts: Family<ByAgent, Counter>,
    /// Quiet spells of running turns: the agent said nothing for `quiet_turn_secs`.
    quiet_turns: Family<ByAgent, Counter>,
    /// Events taken in by catching up on a gap (after downtime or a long sync).
    caught_up: Family<ByAgent, Counter>,
    /// Events past the catch-up bound, reported instead of taken in.
    missed: Family<ByAgent, Counter>,
    /// Sync requests that failed.
    sync_errors: Family<ByAgent, Counter>,
    /// Scheduled runs by how they ended (`answered`, `skipped`, `overlapped`, …).
    schedule_runs: Family<ByOutcome, Counter>,
    /// Webhook requests by what became of them (`accepted`, `replayed`, `bad_signature`…).
    webhook_requests: Family<ByWebhook, Counter>,
    /// What turns spent, as their agents reported it, by unit.
    spend: Amounts,
    /// Prompts refused because a budget was reached.
    budget_refusals: Family<ByAgent, Counter>,
    /// Agents whose Matrix user has synced at least once.
    synced: Mutex<HashSet<AgentId>>,
}

/// The metrics of spend: what turns cost, and the prompts budgets refused.
fn spending(r: &mut Registry) -> (Amounts, Family<ByAgent, Counter>) {
    let spend = registered(
        r,
        "spend",
        "What turns spent as their agents reported it, by currency (or tokens)",
        Family::default(),
    );
    let refusals = registered(
        r,
        "budget_refusals",
        "Prompts refused because a budget was reached",
        Family::default(),
    );
    (spend, refusals)
}

/// The metrics of work nobody typed: scheduled runs, and webhook requests.
fn work_nobody_typed(r: &mut Registry) -> (Family<ByOutcome, Counter>, Family<ByWebhook, Counter>) {
    let runs = registered(
        r,
        "schedule_runs",
        "Scheduled runs by how they ended",
        Family::default(),
    );
    let requests = registered(
        r,
        "webhook_requests",
        "Webhook requests by what became of them",
        Family::default(),
    );
    (runs, requests)
}

/// The metrics of agents in trouble: restarted after a crash, or gone quiet in a turn.
fn agents_in_trouble(r: &mut Registry) -> (Family<ByAgent, Counter>, Family<ByAgent, Counter>) {
    let restarts = registered(
        r,
        "agent_restarts",
        "Agent processes started again after a crash",
        Family::default(),
    );
    let quiet = registered(
        r,
        "quiet_turns",
        "Times a running turn's agent said nothing for quiet_turn_secs",
        Family::default(),
    );
    (restarts, quiet)
}

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Self {
        let mut r = Registry::with_prefix("sidekicks");
        let answer_histogram = || Histogram::new(ANSWER_BUCKETS);
        let (schedule_runs, webhook_requests) = work_nobody_typed(&mut r);
        let (restarts, quiet_turns) = agents_in_trouble(&mut r);
        let (spend, budget_refusals) = spending(&mut r);
        Self {
            turns: registered(
                &mut r,
                "turns",
                "Turns by how they ended",
                Family::default(),
            ),
            first_answer: registered(
                &mut r,
                "first_answer_seconds",
                "Seconds from a message being sent to the first message of its answer",
                Family::new_with_constructor(answer_histogram),
            ),
            answer_posts: registered(
                &mut r,
                "answer_messages",
                "Messages posted for answers",
                Family::default(),
            ),
            edits: registered(
                &mut r,
                "answer_edits",
                "Edits of answers",
                Family::default(),
            ),
            rate_limited: registered(
                &mut r,
                "rate_limited_requests",
                "Requests the homeserver refused with a rate limit",
                Family::default(),
            ),
            polls: registered(
                &mut r,
                "polls",
                "Permission polls and questions by how they ended",
                Family::default(),
            ),
            queued: registered(
                &mut r,
                "queued_prompts",
                "Prompts waiting behind a running turn",
                Family::default(),
            ),
            restarts,
            quiet_turns,
            caught_up: registered(
                &mut r,
                "caught_up_events",
                "Events taken in by catching up on a gap",
                Family::default(),
            ),
            missed: registered(
                &mut r,
                "missed_events",
                "Events past the catch-up bound, reported in the room instead",
                Family::default(),
            ),
            sync_errors: registered(
                &mut r,
                "sync_errors",
                "Sync requests that failed",
                Family::default(),
            ),
            schedule_runs,
            webhook_requests,
            spend,
            budget_refusals,
            synced: Mutex::new(HashSet::new()),
            registry: r,
        }
    }

    /// A turn of `agent` ended with `outcome`; its answer was posted in `posts` messages and
    /// `edits` edits, `rate_limited` requests refused for speed.
    pub fn turn_ended(
        &self,
        agent: &AgentId,
        outcome: &str,
        posts: u32,
        edits: u32,
        rate_limited: u32,
    ) {
        self.turns.get_or_create(&by(agent, outcome)).inc();
        self.answer_posts
            .get_or_create(&agent_label(agent))
            .inc_by(posts.into());
        self.edits
            .get_or_create(&agent_label(agent))
            .inc_by(edits.into());
        self.rate_limited
            .get_or_create(&agent_label(agent))
            .inc_by(rate_limited.into());
    }

    /// The first message of an answer of `agent` appeared `after` the message it answers.
    pub fn first_answer(&self, agent: &AgentId, after: Duration) {
        (self.first_answer.get_or_create(&agent_label(agent))).observe(after.as_secs_f64());
    }

    /// A scheduled run of `agent` ended with `outcome` (a word, never free text).
    pub fn schedule_run(&self, agent: &AgentId, outcome: &str) {
        self.schedule_runs.get_or_create(&by(agent, outcome)).inc();
    }

    /// A request to webhook `webhook` was `outcome` (a word, never free text).
    pub fn webhook_request(&self, webhook: &str, outcome: &str) {
        let labels = ByWebhook {
            webhook: webhook.to_owned(),
            outcome: outcome.to_owned(),
        };
        self.webhook_requests.get_or_create(&labels).inc();
    }

    /// A poll or question of `agent` ended with `outcome`.
    pub fn poll_ended(&self, agent: &AgentId, outcome: &str) {
        self.polls.get_or_create(&by(agent, outcome)).inc();
    }

    /// `n` more prompts of `agent` wait (negative: fewer).
    pub fn queued(&self, agent: &AgentId, n: i64) {
        self.queued.get_or_create(&agent_label(agent)).inc_by(n);
    }

    /// `agent`'s process was started again after a crash.
    pub fn agent_restarted(&self, agent: &AgentId) {
        self.restarts.get_or_create(&agent_label(agent)).inc();
    }

    /// A turn of `agent` spent `amount`, as the agent reported it.
    pub fn spent(&self, agent: &AgentId, amount: &crate::model::budget::Amount) {
        use crate::model::budget::Unit;
        let value = match &amount.unit {
            Unit::Tokens => amount.value as f64,
            Unit::Currency(_) => amount.value as f64 / 1_000_000.0,
        };
        let series = ByUnit {
            agent: agent.to_string(),
            unit: amount.unit.key().to_owned(),
        };
        self.spend.get_or_create(&series).inc_by(value);
    }

    /// A prompt to `agent` was refused: a budget was reached.
    pub fn budget_refused(&self, agent: &AgentId) {
        self.budget_refusals
            .get_or_create(&agent_label(agent))
            .inc();
    }

    /// A running turn of `agent` has said nothing for a while (the room was told).
    pub fn quiet_turn(&self, agent: &AgentId) {
        self.quiet_turns.get_or_create(&agent_label(agent)).inc();
    }

    /// `agent` took in `n` events catching up on a gap, and reported `missed` past the bound.
    pub fn caught_up(&self, agent: &AgentId, n: usize, missed: usize) {
        self.caught_up
            .get_or_create(&agent_label(agent))
            .inc_by(n as u64);
        self.missed
            .get_or_create(&agent_label(agent))
            .inc_by(missed as u64);
    }

    /// A sync of `agent`'s Matrix user failed.
    pub fn sync_failed(&self, agent: &AgentId) {
        self.sync_errors.get_or_create(&agent_label(agent)).inc();
    }

    /// `agent`'s Matrix user has synced.
    pub fn synced(&self, agent: &AgentId) {
        self.synced
            .lock()
            .expect("synced poisoned")
            .insert(agent.clone());
    }

    /// Whether every one of `agents` has synced at least once.
    pub fn all_synced<'a>(&self, mut agents: impl Iterator<Item = &'a AgentId>) -> bool {
        let synced = self.synced.lock().expect("synced poisoned");
        agents.all(|a| synced.contains(a))
    }

    /// Every metric, in the OpenMetrics text format (which Prometheus reads).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// `metric`, registered in `registry` as `name` with `help`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

fn agent_label(agent: &AgentId) -> ByAgent {
    ByAgent {
        agent: agent.to_string(),
    }
}

fn by(agent: &AgentId, outcome: &str) -> ByOutcome {
    ByOutcome {
        agent: agent.to_string(),
        outcome: outcome.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_encoded_by_agent_and_outcome() {
        let m = Metrics::new();
        m.turn_ended(&AgentId::from("a"), "end_turn", 1, 3, 1);
        m.turn_ended(&AgentId::from("a"), "end_turn", 1, 2, 0);
        m.turn_ended(&AgentId::from("a"), "cancelled", 0, 0, 0);
        m.poll_ended(&AgentId::from("a"), "answered");
        m.queued(&AgentId::from("a"), 2);
        m.queued(&AgentId::from("a"), -1);
        m.first_answer(&AgentId::from("a"), Duration::from_millis(300));
        m.sync_failed(&AgentId::from("b"));
        let text = m.encode();
        for line in [
            r#"sidekicks_turns_total{agent="a",outcome="end_turn"} 2"#,
            r#"sidekicks_turns_total{agent="a",outcome="cancelled"} 1"#,
            r#"sidekicks_answer_edits_total{agent="a"} 5"#,
            r#"sidekicks_rate_limited_requests_total{agent="a"} 1"#,
            r#"sidekicks_polls_total{agent="a",outcome="answered"} 1"#,
            r#"sidekicks_queued_prompts{agent="a"} 1"#,
            r#"sidekicks_first_answer_seconds_bucket{le="0.5",agent="a"} 1"#,
            r#"sidekicks_first_answer_seconds_bucket{le="0.25",agent="a"} 0"#,
            r#"sidekicks_sync_errors_total{agent="b"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
        assert!(!m.all_synced([AgentId::from("a")].iter()));
        m.synced(&AgentId::from("a"));
        assert!(m.all_synced([AgentId::from("a")].iter()));
    }
}
