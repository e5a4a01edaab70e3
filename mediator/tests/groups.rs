//! Groups, visibility and state-aware exposure in the session: the seed's scenarios.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tool_mediator::session::{
    GroupConfig, GroupError, ListChanged, Route, STATE_KEY, Session, SessionPolicy, StateStrategy, StateView,
    Visibility,
};
use tool_mediator::{Mediator, NameRules, SourceType, Tool, ToolContext};

fn tool(name: &str) -> Tool {
    Tool::new(name)
        .with_description(format!("The {name} tool."))
        .with_input_schema(json!({"type": "object", "properties": {}}))
}

fn upstream() -> Vec<Tool> {
    ["read_file", "write_file", "query", "insert", "observe", "analyze", "generate", "mode_a_tool", "mode_b_tool"]
        .into_iter()
        .map(tool)
        .collect()
}

fn policy() -> SessionPolicy {
    let mut visibility = HashMap::new();
    for (name, group) in [
        ("read_file", "file_ops"),
        ("write_file", "file_ops"),
        ("query", "database"),
        ("insert", "database.write"),
        ("mode_a_tool", "mode_a"),
        ("mode_b_tool", "mode_b"),
    ] {
        visibility.insert(name.to_owned(), Visibility::Group(group.to_owned()));
    }
    visibility.insert(
        "analyze".to_owned(),
        Visibility::When {
            predicate: Arc::new(|view: &StateView| view.count("actions") > 0),
            counts: vec!["actions".into()],
        },
    );
    SessionPolicy {
        groups: vec![
            GroupConfig::new("file_ops", "File operations"),
            GroupConfig::new("database", "Database operations"),
            GroupConfig::new("database.write", "Write operations").child_of("database"),
            GroupConfig::new("mode_a", "Mode A"),
            GroupConfig::new("mode_b", "Mode B"),
        ],
        exclusions: vec![vec!["mode_a".into(), "mode_b".into()]],
        visibility,
        sort_by_name: true,
        ..SessionPolicy::default()
    }
}

fn session(policy: SessionPolicy) -> Arc<Session> {
    session_for(NameRules::MCP, policy)
}

fn session_for(names: NameRules, policy: SessionPolicy) -> Arc<Session> {
    let mediator = Arc::new(Mediator::builder().name_rules(names).build());
    Arc::new(Session::new(mediator, ToolContext::new("hub", SourceType::Api), policy))
}

async fn names(session: &Session) -> Vec<String> {
    session.list_tools(&upstream(), None).await.unwrap().into_tools().into_iter().map(|tool| tool.name).collect()
}

fn no_args() -> Map<String, Value> {
    Map::new()
}

#[tokio::test]
async fn a_fresh_session_shows_the_always_visible_tools_and_activators() {
    let session = session(policy());
    let listed = names(&session).await;
    assert_eq!(
        listed,
        [
            "analyze",
            "database.activate",
            "file_ops.activate",
            "generate",
            "mode_a.activate",
            "mode_b.activate",
            "observe"
        ]
    );
    assert!(session.list_groups().iter().all(|group| group.name != "root"), "the root group is never listed");
}

#[tokio::test]
async fn activation_reveals_a_group_and_hidden_tools_are_not_callable() {
    let session = session(policy());
    let mut events = session.subscribe();
    names(&session).await;
    assert_eq!(session.route_call("read_file", no_args()).await, Route::NotFound);
    let Route::Local(result) = session.route_call("file_ops.activate", no_args()).await else { panic!() };
    assert_eq!(result["structuredContent"]["tools"], json!(["read_file", "write_file"]));
    assert_eq!(events.try_recv(), Ok(ListChanged));
    assert!(matches!(session.route_call("read_file", no_args()).await, Route::Upstream { .. }));
    let listed = names(&session).await;
    assert!(listed.contains(&"read_file".to_owned()) && listed.contains(&"file_ops.deactivate".to_owned()));
    assert!(!listed.contains(&"file_ops.activate".to_owned()));
    assert!(events.try_recv().is_err(), "listing what the event announced fires nothing more");

    session.route_call("file_ops.deactivate", no_args()).await;
    assert!(!session.is_group_active("file_ops"));
    assert!(!names(&session).await.contains(&"read_file".to_owned()));
    session.route_call("file_ops.activate", no_args()).await;
    assert_eq!(
        session.route_call("file_ops.activate", no_args()).await,
        Route::NotFound,
        "an active group's activator is not listed"
    );
    assert_eq!(session.activate_group("file_ops").await, Ok(()), "activating twice is a no-op");
}

#[tokio::test]
async fn children_need_their_parent_and_exclusive_groups_switch_each_other_off() {
    let session = session(policy());
    names(&session).await;
    assert_eq!(
        session.activate_group("database.write").await,
        Err(GroupError::ParentInactive { group: "database.write".into(), parent: "database".into() })
    );
    assert!(
        !names(&session).await.contains(&"database.write.activate".to_owned()),
        "no activator while the parent is off"
    );
    session.activate_group("database").await.unwrap();
    session.activate_group("database.write").await.unwrap();
    assert!(names(&session).await.contains(&"insert".to_owned()));
    session.deactivate_group("database").await.unwrap();
    assert!(!session.is_group_active("database.write"), "deactivating a parent deactivates its children");

    session.activate_group("mode_a").await.unwrap();
    session.activate_group("mode_b").await.unwrap();
    assert!(!session.is_group_active("mode_a") && session.is_group_active("mode_b"));
    let groups = session.list_groups();
    let mode_b = groups.iter().find(|group| group.name == "mode_b").unwrap();
    assert_eq!((mode_b.active, mode_b.description.as_str()), (true, "Mode B"));
}

#[tokio::test]
async fn hooks_run_first_and_a_refusal_leaves_the_state_unchanged() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let mut policy = policy();
    policy.groups[0].on_activate = Some(Arc::new(move |_group: &str| {
        let flag = flag.clone();
        Box::pin(async move {
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })
    }));
    policy.groups[1].on_activate =
        Some(Arc::new(|_group: &str| Box::pin(async { Err("no database configured".to_owned()) })));
    policy.groups[3].show_deactivator = false;
    let session = session(policy);
    names(&session).await;
    session.activate_group("file_ops").await.unwrap();
    assert!(ran.load(Ordering::SeqCst));
    let Route::Local(refused) = session.route_call("database.activate", no_args()).await else { panic!() };
    assert_eq!(refused["isError"], true);
    assert!(!session.is_group_active("database"));
    session.activate_group("mode_a").await.unwrap();
    assert!(!names(&session).await.contains(&"mode_a.deactivate".to_owned()), "its deactivator is configured off");
}

#[tokio::test]
async fn strict_clients_get_switches_without_dots() {
    let session = session_for(NameRules::STRICT, policy());
    let listed = names(&session).await;
    assert!(listed.contains(&"file_ops_activate".to_owned()), "{listed:?}");
    assert!(listed.iter().all(|name| NameRules::STRICT.is_valid(name)));
    session.activate_group("database").await.unwrap();
    assert!(names(&session).await.contains(&"database_write_activate".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_switches_leave_a_consistent_state() {
    let session = session(policy());
    names(&session).await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let group = ["mode_a", "mode_b", "database", "database.write", "file_ops"][i % 5];
            if i % 3 == 0 {
                let _ = session.deactivate_group(group).await;
            } else {
                let _ = session.activate_group(group).await;
            }
            let _ = session.list_tools(&upstream(), None).await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(!(session.is_group_active("mode_a") && session.is_group_active("mode_b")));
    if session.is_group_active("database.write") {
        assert!(session.is_group_active("database"));
    }
    let listed = names(&session).await;
    for group in session.list_groups() {
        let activator = format!("{}.activate", group.name);
        assert_eq!(
            listed.contains(&activator),
            !group.active && group.parent.as_deref().is_none_or(|p| session.is_group_active(p))
        );
    }
}

#[tokio::test]
async fn hidden_by_state_with_one_event_for_a_burst() {
    let session = session(SessionPolicy {
        state_strategy: StateStrategy::Hide { debounce: Duration::from_millis(50) },
        ..policy()
    });
    let mut events = session.subscribe();
    assert!(!names(&session).await.contains(&"analyze".to_owned()), "no actions captured: hidden");
    assert_eq!(session.route_call("analyze", no_args()).await, Route::NotFound);
    for n in 1..=10 {
        session.set_state(StateView { counts: [("actions".to_owned(), n)].into(), ..StateView::default() });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(events.try_recv(), Ok(ListChanged));
    assert!(events.try_recv().is_err(), "ten changes inside the window, one event");
    assert!(names(&session).await.contains(&"analyze".to_owned()));
}

#[tokio::test]
async fn annotated_by_default_with_counts_that_follow_the_state() {
    let session = session(policy());
    let hint =
        |tools: Vec<Tool>| tools.into_iter().find(|t| t.name == "analyze").unwrap().meta_object()[STATE_KEY].clone();
    let before = hint(session.list_tools(&upstream(), None).await.unwrap().into_tools());
    assert_eq!(before["counts"]["actions"], 0);
    assert!(before["hint"].as_str().unwrap().contains("no data captured yet"));
    assert!(matches!(session.route_call("analyze", no_args()).await, Route::Upstream { .. }), "listed, so callable");
    session.set_state(StateView { counts: [("actions".to_owned(), 3)].into(), ..StateView::default() });
    let after = hint(session.list_tools(&upstream(), None).await.unwrap().into_tools());
    assert_eq!(after["counts"]["actions"], 3);
    assert!(after.get("hint").is_none());
}

#[tokio::test]
async fn each_client_has_its_own_groups() {
    let first = session(policy());
    let second = session(policy());
    first.activate_group("file_ops").await.unwrap();
    assert!(!second.is_group_active("file_ops"));
}

#[tokio::test]
async fn enum_values_follow_the_state_only_when_the_policy_asks() {
    let observe = Tool::new("observe").with_input_schema(json!({
        "type": "object",
        "properties": {"what": {"type": "string", "enum": ["errors", "logs", "network", "actions"]}},
        "required": ["what"]
    }));
    let generate = Tool::new("generate").with_input_schema(json!({
        "type": "object",
        "properties": {"format": {"type": "string", "enum": ["reproduction"]}}
    }));
    let count = |name: &'static str| -> tool_mediator::session::Predicate {
        Arc::new(move |view: &StateView| view.count(name) > 0)
    };
    let filters = vec![
        tool_mediator::session::EnumFilter {
            tool: "observe".into(),
            parameter: "what".into(),
            values: vec![("network".into(), count("network")), ("actions".into(), count("actions"))],
        },
        tool_mediator::session::EnumFilter {
            tool: "generate".into(),
            parameter: "format".into(),
            values: vec![("reproduction".into(), count("actions"))],
        },
    ];
    let upstream = vec![observe, generate];
    let enum_of = |tools: &[Tool]| {
        tools.iter().find(|t| t.name == "observe").unwrap().input_schema_value().unwrap()["properties"]["what"]["enum"]
            .clone()
    };

    let annotated = session(SessionPolicy { enum_filters: filters.clone(), ..SessionPolicy::default() });
    let tools = annotated.list_tools(&upstream, None).await.unwrap().into_tools();
    assert_eq!(enum_of(&tools), json!(["errors", "logs", "network", "actions"]), "never filtered unless Hide asks");

    let hiding = session(SessionPolicy {
        enum_filters: filters,
        state_strategy: StateStrategy::Hide { debounce: Duration::from_millis(10) },
        ..SessionPolicy::default()
    });
    let mut events = hiding.subscribe();
    let tools = hiding.list_tools(&upstream, None).await.unwrap().into_tools();
    assert_eq!(enum_of(&tools), json!(["errors", "logs"]));
    assert!(!tools.iter().any(|t| t.name == "generate"), "no mode of it is actionable: not listed");
    assert_eq!(hiding.route_call("generate", no_args()).await, Route::NotFound);

    let call = json!({"what": "network"}).as_object().unwrap().clone();
    let Route::Local(refused) = hiding.route_call("observe", call.clone()).await else {
        panic!("a hidden value is refused")
    };
    assert_eq!(refused["isError"], true);

    hiding.set_state(StateView { counts: [("network".to_owned(), 5)].into(), ..StateView::default() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(events.try_recv(), Ok(ListChanged), "a schema that changed is announced");
    assert!(matches!(hiding.route_call("observe", call).await, Route::Upstream { .. }));
    let tools = hiding.list_tools(&upstream, None).await.unwrap().into_tools();
    assert_eq!(enum_of(&tools), json!(["errors", "logs", "network"]));
}

#[tokio::test]
async fn before_the_first_listing_only_a_passthrough_forwards_calls() {
    let mediated = session(policy());
    assert_eq!(mediated.route_call("read_file", no_args()).await, Route::NotFound);
    let plain = Session::passthrough(ToolContext::new("hub", SourceType::Api));
    assert!(matches!(plain.route_call("read_file", no_args()).await, Route::Upstream { .. }));
}

#[tokio::test]
async fn a_category_tool_lists_only_the_members_the_client_can_call() {
    let mut visibility = HashMap::new();
    visibility.insert("delete_file".to_owned(), Visibility::Group("danger".to_owned()));
    let policy = SessionPolicy {
        disclosure: Some(2),
        groups: vec![GroupConfig::new("danger", "Destructive file operations")],
        visibility,
        ..SessionPolicy::default()
    };
    let mediator = Arc::new(Mediator::builder().transformer(tool_mediator::RuleTransformer::new()).build());
    let session = Session::new(mediator, ToolContext::new("fs", SourceType::Api), policy);
    let files: Vec<Tool> = ["read_file", "write_file", "move_file", "delete_file"].into_iter().map(tool).collect();
    let listed: Vec<String> =
        session.list_tools(&files, None).await.unwrap().into_tools().into_iter().map(|t| t.name).collect();
    assert!(listed.contains(&"file_tools".to_owned()), "{listed:?}");
    let Route::Local(result) = session.route_call("file_tools", no_args()).await else { panic!() };
    let members: Vec<&str> =
        result["structuredContent"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(members, ["read_file", "write_file", "move_file"]);
    assert_eq!(session.route_call("delete_file", no_args()).await, Route::NotFound);
}

#[tokio::test]
async fn a_cursor_from_before_a_change_is_refused() {
    let session = session(SessionPolicy { page_size: Some(2), ..policy() });
    let first = session.list_tools(&upstream(), None).await.unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    session.activate_group("file_ops").await.unwrap();
    assert!(session.list_tools(&upstream(), Some(&cursor)).await.is_err());
    let fresh = session.list_tools(&upstream(), None).await.unwrap();
    assert!(session.list_tools(&upstream(), fresh.next_cursor.as_deref()).await.is_ok());
}

#[tokio::test]
async fn parent_cycles_and_ancestor_exclusions_do_not_break_the_session() {
    let policy = SessionPolicy {
        groups: vec![
            GroupConfig::new("a", "A").child_of("b"),
            GroupConfig::new("b", "B").child_of("a"),
            GroupConfig::new("parent", "P"),
            GroupConfig::new("child", "C").child_of("parent"),
        ],
        exclusions: vec![vec!["parent".into(), "child".into()]],
        ..SessionPolicy::default()
    };
    let session = session(policy);
    session.list_tools(&upstream(), None).await.unwrap();
    assert!(session.activate_group("a").await.is_err());
    assert!(!session.is_group_active("a"));
    session.activate_group("parent").await.unwrap();
    assert!(matches!(session.activate_group("child").await, Err(GroupError::ExcludesAncestor { .. })));
    assert!(session.is_group_active("parent"));
}

#[tokio::test]
async fn a_refusing_hook_runs_before_any_other() {
    let deactivated = Arc::new(AtomicBool::new(false));
    let flag = deactivated.clone();
    let mut policy = policy();
    policy.groups[3].on_deactivate = Some(Arc::new(move |_group: &str| {
        let flag = flag.clone();
        Box::pin(async move {
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })
    }));
    policy.groups[4].on_activate = Some(Arc::new(|_group: &str| Box::pin(async { Err("not now".to_owned()) })));
    let session = session(policy);
    session.activate_group("mode_a").await.unwrap();
    assert!(session.activate_group("mode_b").await.is_err());
    assert!(!deactivated.load(Ordering::SeqCst), "mode_a's hook did not run for an activation that was refused");
    assert!(session.is_group_active("mode_a"));
}

#[tokio::test]
async fn a_switch_never_shadows_an_upstream_tool() {
    let session = session(policy());
    let mut tools = upstream();
    tools.push(tool("file_ops.activate"));
    let listed: Vec<String> =
        session.list_tools(&tools, None).await.unwrap().into_tools().into_iter().map(|t| t.name).collect();
    assert_eq!(listed.iter().filter(|name| *name == "file_ops.activate").count(), 1);
    assert!(matches!(session.route_call("file_ops.activate", no_args()).await, Route::Upstream { .. }));
}
