//! The allowlist rules, table by table.

use super::*;
use crate::model::agent::{ConfigOption, ConfigValue};
use crate::model::modes::{ApprovalOption, KnownModes};

/// What Claude Code's dialect knows, in small: `default` and `plan` ask.
const CLAUDE: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["default", "plan"],
    not_asking: &["acceptEdits", "auto", "bypassPermissions"],
    initial: Some("default"),
    option_modes: &[OptionMode {
        option: "exit-plan-auto",
        kind: None,
        mode: "auto",
    }],
    approval_options: &[ApprovalOption {
        id: "approval_policy",
        asks: "on-request",
    }],
    approval_commands: &["yolo"],
    lasting_options: &["proceed_always_project"],
};

fn modes(ids: &[&str], current: &str) -> SessionSettings {
    SessionSettings {
        modes: ids.iter().map(|m| (m.to_string(), m.to_string())).collect(),
        current_mode: Some(current.into()),
        options: vec![],
    }
}

fn choice(id: &str, category: &str, values: &[&str]) -> ConfigOption {
    ConfigOption {
        id: id.into(),
        name: id.into(),
        category: Some(category.into()),
        value: ConfigValue::Choice {
            current: values[0].into(),
            choices: values
                .iter()
                .map(|v| (v.to_string(), v.to_string()))
                .collect(),
        },
    }
}

/// Settings offering modes only as a config option of category `mode`, plus a model, an
/// approval policy and an option that is nobody's concern.
fn option_settings() -> SessionSettings {
    SessionSettings {
        modes: vec![],
        current_mode: None,
        options: vec![
            choice("model", "model", &["small", "large"]),
            choice("approval", "mode", &["ask", "yolo"]),
            choice("approval_policy", "other", &["on-request", "never"]),
            choice("allow_all", "permissions", &["on", "off"]),
            choice("effort", "thought_level", &["low", "high"]),
            choice("verbose", "other", &["on", "off"]),
        ],
    }
}

fn kept(mode: &str, by_admin: bool) -> KeptMode {
    KeptMode {
        mode: mode.into(),
        by_admin,
    }
}

#[test]
fn non_admins_choose_only_modes_known_to_ask_and_admins_choose_anything() {
    let policy = SettingsPolicy {
        choosable_modes: Some(vec!["default".into(), "bypassPermissions".into()]),
        choosable_values: BTreeMap::from([("model".into(), vec!["small".into()])]),
        ..SettingsPolicy::default()
    };
    let rules = policy.rules(&CLAUDE);
    let s = modes(
        &["default", "plan", "acceptEdits", "auto", "brand-new"],
        "default",
    );
    let mode = |m: &str| SettingPlan::SetMode(m.into());
    let admin_only = |m: &str| Err(PolicyRefusal::AdminOnly(m.into()));
    let table = [
        (mode("default"), Ok(())),
        (mode("DEFAULT"), Ok(())),
        // Asks, but the config lets people choose only `default` (and a mode that does not
        // ask, which listing does not open).
        (
            mode("plan"),
            Err(PolicyRefusal::NotChoosable {
                what: "mode".into(),
                value: "plan".into(),
                choosable: vec!["default".into(), "bypassPermissions".into()],
            }),
        ),
        (mode("bypassPermissions"), admin_only("bypassPermissions")),
        (mode("auto"), admin_only("auto")),
        // A mode nobody recorded is one that does not ask.
        (mode("brand-new"), admin_only("brand-new")),
    ];
    for (plan, expected) in table {
        assert_eq!(rules.check(&plan, &s, false), expected, "{plan:?}");
        assert_eq!(rules.check(&plan, &s, true), Ok(()), "admin: {plan:?}");
    }
}

#[test]
fn a_mode_option_follows_the_rules_of_modes_and_approval_options_are_for_admins() {
    let policy = SettingsPolicy {
        asking_modes: Some(vec!["ask".into()]),
        choosable_values: BTreeMap::from([
            ("model".into(), vec!["small".into()]),
            ("listed".into(), vec!["yes".into()]),
            ("allow_all".into(), vec!["on".into()]),
        ]),
        ..SettingsPolicy::default()
    };
    let rules = policy.rules(&CLAUDE);
    let mut s = option_settings();
    s.options.push(choice("listed", "other", &["yes", "no"]));
    let set = |o: &str, v: &str| SettingPlan::SetOption(o.into(), ConfigChoice::Value(v.into()));
    let table = [
        (set("approval", "ask"), Ok(())),
        (
            set("approval", "yolo"),
            Err(PolicyRefusal::AdminOnly("yolo".into())),
        ),
        (
            set("approval_policy", "on-request"),
            Err(PolicyRefusal::AdminOnlyOption("approval_policy".into())),
        ),
        (set("model", "small"), Ok(())),
        (
            set("model", "large"),
            Err(PolicyRefusal::NotChoosable {
                what: "model".into(),
                value: "large".into(),
                choosable: vec!["small".into()],
            }),
        ),
        // What decides approvals is for admins, even where the config lists it.
        (
            set("allow_all", "on"),
            Err(PolicyRefusal::AdminOnlyOption("allow_all".into())),
        ),
        // Of the rest, the model and the thinking effort are open; an option nobody listed
        // as choosable (the agent may add one that decides approvals) is for admins.
        (set("effort", "high"), Ok(())),
        (
            set("verbose", "on"),
            Err(PolicyRefusal::Unlisted("verbose".into())),
        ),
        (
            set("not-offered", "x"),
            Err(PolicyRefusal::Unlisted("not-offered".into())),
        ),
        (set("listed", "yes"), Ok(())),
        (
            set("listed", "no"),
            Err(PolicyRefusal::NotChoosable {
                what: "listed".into(),
                value: "no".into(),
                choosable: vec!["yes".into()],
            }),
        ),
    ];
    for (plan, expected) in table {
        assert_eq!(rules.check(&plan, &s, false), expected, "{plan:?}");
        assert_eq!(rules.check(&plan, &s, true), Ok(()), "admin: {plan:?}");
    }
}

#[test]
fn without_any_knowledge_every_mode_is_for_admins() {
    let rules = SettingsPolicy::default().rules(&KnownModes::UNKNOWN);
    let s = modes(&["default", "ask", "read-only"], "default");
    for mode in ["default", "ask", "read-only", "plan"] {
        assert_eq!(
            rules.check(&SettingPlan::SetMode(mode.into()), &s, false),
            Err(PolicyRefusal::AdminOnly(mode.into())),
            "{mode}"
        );
        assert_eq!(rules.asking(mode), Asking::DoesNotAsk);
    }
    // The config can vouch for one.
    let vouched = SettingsPolicy {
        asking_modes: Some(vec!["ask".into()]),
        ..SettingsPolicy::default()
    }
    .rules(&KnownModes::UNKNOWN);
    assert_eq!(
        vouched.check(&SettingPlan::SetMode("ask".into()), &s, false),
        Ok(())
    );
}

#[test]
fn modes_that_do_not_decide_asking_are_free_and_never_fenced() {
    let rules = SettingsPolicy::default().rules(&KnownModes::UNRELATED);
    let s = modes(&["off", "high"], "off");
    assert!(!rules.fences(&s));
    assert_eq!(rules.asking("high"), Asking::NotByMode);
    assert_eq!(
        rules.check(&SettingPlan::SetMode("high".into()), &s, false),
        Ok(())
    );
    assert_eq!(rules.target(&s, None), Ok(None));
    assert_eq!(rules.on_report("high", None, &s), ModeVerdict::Stays);
}

#[test]
fn the_target_mode_is_the_kept_one_while_it_may_be_else_the_initial_one() {
    let rules = SettingsPolicy::default().rules(&CLAUDE);
    let s = modes(&["default", "plan", "auto", "bypassPermissions"], "auto");
    let table: [(Option<KeptMode>, &str); 5] = [
        (None, "default"),
        (Some(kept("plan", false)), "plan"),
        // A mode that does not ask is kept only when an admin chose it.
        (Some(kept("bypassPermissions", true)), "bypassPermissions"),
        (Some(kept("bypassPermissions", false)), "default"),
        // Kept, but the agent no longer offers it.
        (Some(kept("gone", true)), "default"),
    ];
    for (kept, expected) in table {
        assert_eq!(
            rules.target(&s, kept.as_ref()),
            Ok(Some(expected.to_owned())),
            "{kept:?}"
        );
    }
    // No modes: nothing to fence.
    assert_eq!(rules.target(&SessionSettings::default(), None), Ok(None));
}

#[test]
fn an_agent_without_a_mode_known_to_ask_is_not_used_silently() {
    let offered = vec!["agent".to_owned(), "full".to_owned()];
    let s = modes(&["agent", "full"], "agent");
    // Its dialect's initial mode was renamed away, and no other mode is known to ask.
    assert_eq!(
        SettingsPolicy::default().rules(&CLAUDE).target(&s, None),
        Err(Unfenced::NoAskingMode {
            offered: offered.clone()
        })
    );
    assert_eq!(
        SettingsPolicy::default()
            .rules(&KnownModes::UNKNOWN)
            .target(&s, None),
        Err(Unfenced::NoAskingMode {
            offered: offered.clone()
        })
    );
    // A configured initial mode the agent does not offer is an error too, not a guess.
    let typo = SettingsPolicy {
        initial_mode: Some("defualt".into()),
        ..SettingsPolicy::default()
    };
    assert_eq!(
        typo.rules(&CLAUDE).target(&s, None),
        Err(Unfenced::InitialNotOffered {
            initial: "defualt".into(),
            offered,
        })
    );
    // The dialect's initial mode renamed, another asking one offered: that one.
    let renamed = modes(&["plan", "auto"], "auto");
    assert_eq!(
        SettingsPolicy::default()
            .rules(&CLAUDE)
            .target(&renamed, None),
        Ok(Some("plan".into()))
    );
}

#[test]
fn a_configured_initial_mode_is_an_admins_choice_even_when_it_does_not_ask() {
    let policy = SettingsPolicy {
        initial_mode: Some("auto".into()),
        ..SettingsPolicy::default()
    };
    let rules = policy.rules(&CLAUDE);
    let s = modes(&["default", "auto"], "auto");
    assert_eq!(rules.target(&s, None), Ok(Some("auto".into())));
    assert_eq!(rules.on_report("auto", None, &s), ModeVerdict::Stays);
}

#[test]
fn a_switch_to_a_mode_that_does_not_ask_is_put_back_unless_an_admin_chose_it() {
    let rules = SettingsPolicy::default().rules(&CLAUDE);
    let s = modes(
        &["default", "plan", "acceptEdits", "auto", "brand-new"],
        "default",
    );
    let table: [(&str, Option<KeptMode>, ModeVerdict); 7] = [
        ("plan", None, ModeVerdict::Stays),
        ("default", Some(kept("auto", true)), ModeVerdict::Stays),
        ("auto", None, ModeVerdict::PutBack("default".into())),
        (
            "acceptEdits",
            Some(kept("plan", false)),
            ModeVerdict::PutBack("plan".into()),
        ),
        ("auto", Some(kept("auto", true)), ModeVerdict::Stays),
        // An admin chose one mode that does not ask; the agent went to another.
        (
            "brand-new",
            Some(kept("auto", true)),
            ModeVerdict::PutBack("auto".into()),
        ),
        (
            "AUTO",
            Some(kept("auto", false)),
            ModeVerdict::PutBack("default".into()),
        ),
    ];
    for (reported, kept, expected) in table {
        assert_eq!(
            rules.on_report(reported, kept.as_ref(), &s),
            expected,
            "{reported} {kept:?}"
        );
    }
    let stuck = modes(&["auto", "full"], "auto");
    assert!(matches!(
        rules.on_report("full", None, &stuck),
        ModeVerdict::Unfenced(Unfenced::NoAskingMode { .. })
    ));
}

#[test]
fn poll_options_that_switch_to_a_mode_that_does_not_ask_need_an_admin() {
    let known = KnownModes {
        option_modes: &[
            OptionMode {
                option: "exit-plan-auto",
                kind: None,
                mode: "auto",
            },
            OptionMode {
                option: "proceed_always",
                kind: Some(ToolKind::Edit),
                mode: "acceptEdits",
            },
        ],
        ..CLAUDE
    };
    let rules = SettingsPolicy::default().rules(&known);
    let s = modes(&["default", "plan", "acceptEdits", "auto"], "plan");
    let table = [
        ("exit-plan-auto", None, Some("auto")),
        // The option's ID is a mode of the session (as older adapters name them).
        ("acceptEdits", None, Some("acceptEdits")),
        // Switches to a mode that asks: anyone who may approve.
        ("default", None, None),
        (
            "proceed_always_project",
            Some(ToolKind::Edit),
            Some("acceptEdits"),
        ),
        ("proceed_always", Some(ToolKind::Execute), None),
        ("allow", None, None),
    ];
    for (option, kind, expected) in table {
        assert_eq!(
            rules.option_needs_admin(option, kind, &s).as_deref(),
            expected,
            "{option} {kind:?}"
        );
    }
    assert_eq!(
        rules.implied_mode("default", None, &s).as_deref(),
        Some("default")
    );
}

#[test]
fn the_current_mode_comes_from_session_modes_else_the_mode_option() {
    let s = modes(&["default", "auto"], "auto");
    assert_eq!(current_mode(&s).as_deref(), Some("auto"));
    assert_eq!(offered_modes(&s), vec!["default", "auto"]);
    let o = option_settings();
    assert_eq!(current_mode(&o).as_deref(), Some("ask"));
    assert_eq!(offered_modes(&o), vec!["ask", "yolo"]);
    assert_eq!(current_mode(&SessionSettings::default()), None);
}
