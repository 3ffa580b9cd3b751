//! The critical path of one governed action over MCP, counted on the wire:
//! which calls it waits for one after another, and which run together.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adk_computer_use::VerificationOutcome;
use adk_computer_use::chain::ChainOutcome;
use adk_computer_use::contracts::ExecutionMode;
use adk_computer_use::mcp::{
    ChildTransport, ComputerUseMcpRuntime, CountedTransport, McpRuntimeConfig, RoundTrips,
};
use adk_computer_use_testkit::child::*;

async fn counted_sim() -> (Arc<ComputerUseMcpRuntime>, RoundTrips) {
    let mut command = tokio::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::SERVER,
    ));
    command.arg("--principal").arg(PRINCIPAL);
    // The transport `ComputerUseMcpRuntime::spawn` speaks through.
    let child = ChildTransport::spawn(command).unwrap();
    let trips = RoundTrips::new();
    let config = McpRuntimeConfig::new(PRINCIPAL).capability_tool("write_clipboard");
    let runtime =
        ComputerUseMcpRuntime::connect(CountedTransport::new(child, trips.clone()), config)
            .await
            .unwrap();
    runtime
        .start_session(Some("round trips"), None)
        .await
        .unwrap();
    (Arc::new(runtime), trips)
}

fn sorted(round: &[String]) -> Vec<&str> {
    let mut names: Vec<&str> = round.iter().map(String::as_str).collect();
    names.sort_unstable();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_governed_action_waits_for_four_calls_alone_and_the_second_asks_no_capabilities() {
    let (runtime, trips) = counted_sim().await;
    let session = session(&runtime, "agent-rt");
    let mut seen = Vec::new();
    for n in 0..2 {
        trips.reset();
        let done = match session
            .run(write_clipboard(&format!("rt-{n}"), "counted", false))
            .await
            .unwrap()
        {
            ChainOutcome::Completed(done) => done,
            _ => panic!("the simulator runs a public clipboard write"),
        };
        assert_eq!(done.outcome(), &VerificationOutcome::Verified);
        seen.push(trips.rounds());
    }
    eprintln!("first action: {:?}", seen[0]);
    eprintln!("second action: {:?}", seen[1]);
    // The chain issues the observations together and the evidence read
    // with both releases together; how the client's one connection
    // interleaves their answers is its own, so a group may take more than
    // one round on the wire. What the chain waits for alone, it waits for
    // alone: preview, reservation, lease, execution, in that order.
    let shape = |rounds: &[Vec<String>], observations: &[&str]| {
        let lone = [
            "preview_action",
            "reserve_target",
            "acquire_control_lease",
            "execute_action",
        ];
        let at = |name: &str| {
            rounds
                .iter()
                .position(|r| r.iter().any(|c| c == name))
                .unwrap_or_else(|| panic!("{name} in {rounds:?}"))
        };
        let spots: Vec<usize> = lone.iter().map(|name| at(name)).collect();
        for (name, spot) in lone.iter().zip(&spots) {
            assert_eq!(
                rounds[*spot],
                [*name],
                "{name} waited for alone: {rounds:?}"
            );
        }
        assert!(spots.windows(2).all(|w| w[0] + 1 == w[1]), "{rounds:?}");
        let before_calls = rounds[..spots[0]].concat();
        let before = sorted(&before_calls);
        assert_eq!(before, observations, "{rounds:?}");
        assert!(spots[0] <= observations.len(), "{rounds:?}");
        let after = rounds[spots[3] + 1..].concat();
        assert_eq!(
            sorted(&after),
            [
                "get_session_events",
                "release_control_lease",
                "release_target_reservation"
            ],
            "{rounds:?}"
        );
        rounds.len()
    };
    let first = shape(
        &seen[0],
        &[
            "execute_action:get_ui_tree",
            "execute_action:snapshot",
            "get_execution_capabilities",
        ],
    );
    // The second action reuses the session's capabilities.
    let second = shape(
        &seen[1],
        &["execute_action:get_ui_tree", "execute_action:snapshot"],
    );
    assert_eq!(trips.calls(), 9);
    eprintln!("rounds on the wire: {first}, then {second}");
    assert_eq!(session.shutdown().await.leaked(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_action_makes_the_next_observation_ask_for_capabilities_again() {
    let (runtime, trips) = counted_sim().await;
    let session = session(&runtime, "agent-rt");
    let _ = session
        .run(write_clipboard("rt-a", "one", false))
        .await
        .unwrap();
    // A preview the server blocks (a write in shadow mode) may mean its
    // capabilities changed.
    let mut shadow = write_clipboard("rt-s", "two", false);
    shadow.mode = ExecutionMode::Shadow;
    assert!(matches!(
        session.run(shadow).await.unwrap(),
        ChainOutcome::Blocked(_)
    ));
    trips.reset();
    let _ = session
        .run(write_clipboard("rt-b", "three", false))
        .await
        .unwrap();
    let rounds = trips.rounds();
    assert!(
        rounds[0].iter().any(|c| c == "get_execution_capabilities"),
        "{rounds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_task_lease_an_action_waits_for_three_calls_alone_and_the_task_for_one_acquire_and_one_release()
 {
    use adk_computer_use::chain::TaskLeaseTerms;
    let (runtime, trips) = counted_sim().await;
    let session = session(&runtime, "agent-task");
    // The capabilities are asked for once per session, before the task.
    let _ = session
        .run(write_clipboard("warm", "warm", false))
        .await
        .unwrap();
    trips.reset();
    let terms = TaskLeaseTerms::background(3, std::time::Duration::from_secs(60)).unwrap();
    let mut task = session.lease_task(terms).await.unwrap();
    assert_eq!(trips.rounds(), [["acquire_control_lease"]]);
    for n in 0..3 {
        trips.reset();
        match session
            .run_under(
                &mut task,
                write_clipboard(&format!("task-{n}"), "counted", false),
            )
            .await
            .unwrap()
        {
            ChainOutcome::Completed(done) => {
                assert_eq!(done.outcome(), &VerificationOutcome::Verified)
            }
            _ => panic!("the simulator runs a public clipboard write"),
        }
        let rounds = trips.rounds();
        eprintln!("action {n} under the task lease: {rounds:?}");
        let all = rounds.concat();
        assert!(
            !all.iter().any(|c| c.contains("control_lease")),
            "no lease call on an action's path: {rounds:?}"
        );
        let lone = ["preview_action", "reserve_target", "execute_action"];
        let spots: Vec<usize> = lone
            .iter()
            .map(|name| {
                rounds
                    .iter()
                    .position(|r| r == &[*name])
                    .unwrap_or_else(|| panic!("{name} alone in {rounds:?}"))
            })
            .collect();
        assert!(spots.windows(2).all(|w| w[0] + 1 == w[1]), "{rounds:?}");
        assert_eq!(
            sorted(&rounds[..spots[0]].concat()),
            ["execute_action:get_ui_tree", "execute_action:snapshot"],
            "{rounds:?}"
        );
        assert_eq!(
            sorted(&rounds[spots[2] + 1..].concat()),
            ["get_session_events", "release_target_reservation"],
            "{rounds:?}"
        );
        assert_eq!(trips.calls(), 7, "{rounds:?}");
    }
    trips.reset();
    task.release().await.unwrap();
    assert_eq!(trips.rounds(), [["release_control_lease"]]);
    assert_eq!(session.shutdown().await.leaked(), 0);
}
