//! What a task lease asks for (its terms) and why one cannot be spent (its
//! refusals): the plain data a host builds and matches on, apart from the
//! lease itself (`task`), which holds the runtime's lease and its guard.

use std::time::Duration;

use crate::ComputerUseError;
use crate::contracts::ExecutionMode;

/// What a task lease asks for: how many mutations, in which mode, for how
/// long. The boundaries are not a term: they are always the session's
/// target (its application, and its window when it names one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLeaseTerms {
    budget: u32,
    ttl: Duration,
    mode: ExecutionMode,
}

impl TaskLeaseTerms {
    /// The largest budget the protocol allows (`action_budget` ≤ 10,000).
    pub const MAX_BUDGET: u32 = 10_000;
    /// The longest TTL the protocol allows (`ttl_ms` ≤ 300,000): the
    /// longest another writer can wait for a task whose agent crashed.
    pub const MAX_TTL: Duration = Duration::from_secs(300);

    /// `budget` background mutations within `ttl`.
    ///
    /// ```
    /// use adk_computer_use::chain::TaskLeaseTerms;
    /// use std::time::Duration;
    /// let terms = TaskLeaseTerms::background(20, Duration::from_secs(60)).unwrap();
    /// assert_eq!(terms.budget(), 20);
    /// assert!(TaskLeaseTerms::background(0, Duration::from_secs(60)).is_err());
    /// assert!(TaskLeaseTerms::background(5, Duration::from_secs(301)).is_err());
    /// ```
    pub fn background(budget: u32, ttl: Duration) -> Result<Self, ComputerUseError> {
        Self::new(budget, ttl, ExecutionMode::Background)
    }

    /// `budget` foreground mutations within `ttl` (an exclusive lease: the
    /// person's input is not shared while it is held).
    pub fn foreground(budget: u32, ttl: Duration) -> Result<Self, ComputerUseError> {
        Self::new(budget, ttl, ExecutionMode::Foreground)
    }

    fn new(budget: u32, ttl: Duration, mode: ExecutionMode) -> Result<Self, ComputerUseError> {
        if !(1..=Self::MAX_BUDGET).contains(&budget) {
            return Err(ComputerUseError::InvalidRequest {
                field: "budget".into(),
                message: format!("expected 1 to {} mutations, got {budget}", Self::MAX_BUDGET),
            });
        }
        if ttl < Duration::from_millis(1) || ttl > Self::MAX_TTL {
            return Err(ComputerUseError::InvalidRequest {
                field: "ttl".into(),
                message: format!(
                    "expected 1 ms to {} s, got {} ms",
                    Self::MAX_TTL.as_secs(),
                    ttl.as_millis()
                ),
            });
        }
        Ok(Self { budget, ttl, mode })
    }

    /// How many mutations the lease is asked to authorize.
    pub fn budget(&self) -> u32 {
        self.budget
    }

    /// How long the lease is asked to last.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The mode every action under it must request.
    pub fn mode(&self) -> ExecutionMode {
        self.mode
    }
}

/// Why a task lease cannot be spent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskLeaseRefusal {
    /// It was released: the task is over.
    #[error("it was released")]
    Released,
    /// It was dropped unreleased: the reaper is giving it back.
    #[error("it was dropped, and the session's reaper is releasing it")]
    Dropped,
    /// It was taken by another session: a task lease is spent only by the
    /// session that took it.
    #[error("it was taken by another session")]
    OfAnotherSession,
    /// An action spent from it has not ended yet: a task has one writer,
    /// and its actions run one at a time.
    #[error("action {action_id}, spent from it, has not ended yet")]
    InUse {
        /// The action still holding it.
        action_id: String,
    },
}
