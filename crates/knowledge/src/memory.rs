//! [`MemoryKnowledge`]: knowledge kept in the process, for tests and short-lived hosts.

use std::collections::BTreeMap;
use std::sync::Mutex;

use wayline_core::StoreError;
use wayline_core::store::check_id;

use crate::model::Knowledge;
use crate::store::{Change, KnowledgeStore};

/// Knowledge in memory; lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryKnowledge {
    suts: Mutex<BTreeMap<String, Knowledge>>,
}

impl MemoryKnowledge {
    /// An empty store.
    pub fn new() -> Self {
        MemoryKnowledge::default()
    }

    fn suts(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Knowledge>> {
        self.suts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl KnowledgeStore for MemoryKnowledge {
    async fn load(&self, sut: &str) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        Ok(self.suts().get(sut).cloned().unwrap_or_default())
    }

    async fn update(&self, sut: &str, change: Change) -> Result<Knowledge, StoreError> {
        check_id("sut", sut)?;
        let mut suts = self.suts();
        let knowledge = suts.entry(sut.to_owned()).or_default();
        change(knowledge);
        Ok(knowledge.clone())
    }

    async fn suts(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.suts().keys().cloned().collect())
    }
}
