//! Learned pitfalls as past incidents, for the guard's memory-guided suggestions (core's
//! [`IncidentMemory`]).

use wayline_core::{Incident, IncidentMemory};

use crate::model::Knowledge;
use crate::words;

impl IncidentMemory for Knowledge {
    /// Pitfalls whose words (name, description, error message, operation) overlap the
    /// symptoms' words, by Jaccard similarity; resolved ones carry their resolution.
    fn similar_incidents(&self, symptoms: &str, limit: usize) -> Vec<Incident> {
        let wanted = words::keywords(symptoms);
        if wanted.is_empty() {
            return Vec::new();
        }
        let mut found: Vec<Incident> = self
            .pitfalls
            .iter()
            .filter_map(|pitfall| {
                let text = format!(
                    "{} {} {} {}",
                    pitfall.name,
                    pitfall.description.as_deref().unwrap_or_default(),
                    pitfall.error_pattern.message_contains,
                    pitfall.trigger.operation_id
                );
                let have = words::keywords(&text);
                let shared = have.iter().filter(|word| wanted.contains(word)).count();
                if shared == 0 {
                    return None;
                }
                let union = have.len() + wanted.len() - shared;
                Some(Incident::new(
                    pitfall.id.clone(),
                    pitfall
                        .description
                        .clone()
                        .unwrap_or_else(|| pitfall.name.clone()),
                    pitfall
                        .resolution
                        .as_ref()
                        .map(|resolution| resolution.description.clone()),
                    shared as f64 / union as f64,
                ))
            })
            .collect();
        found.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
        found.truncate(limit);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::sample;

    #[test]
    fn pitfalls_like_the_symptoms_come_back_with_their_resolution() {
        let knowledge = sample();
        let found = knowledge.similar_incidents("update fails: NodeGroupId is required", 5);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "pitfall_1");
        assert_eq!(
            found[0].resolution.as_deref(),
            Some("Save nodegroup_1 first")
        );
        assert!(found[0].similarity > 0.0 && found[0].similarity <= 1.0);
        assert!(
            knowledge
                .similar_incidents("certificate expired", 5)
                .is_empty()
        );
        assert!(knowledge.similar_incidents("", 5).is_empty());
    }
}
