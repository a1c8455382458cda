use super::*;

fn line(role: Role, text: &str) -> Line {
    Line {
        minute: Some(crate::base::text::days_from_civil(2023, 5, 8) * 1440 + 600),
        role,
        text: text.into(),
    }
}

#[test]
fn a_users_liking_is_a_preference() {
    let req = NoteRequest {
        max_facts: 40,
        messages: vec![
            line(Role::User, "I'm vegetarian, and I love spicy food."),
            line(Role::User, "My sister Ana lives in Porto now."),
        ],
    };
    let facts = note(&req);
    assert!(
        facts
            .iter()
            .any(|f| f.kind == FactKind::Preference && f.sentence.contains("vegetarian")),
        "{facts:?}"
    );
    let ana = facts.iter().find(|f| f.sentence.contains("Porto")).unwrap();
    assert_eq!(ana.kind, FactKind::Fact);
}

#[test]
fn each_fact_names_the_message_it_came_from() {
    let req = NoteRequest {
        max_facts: 40,
        messages: vec![
            line(Role::User, "Hello there."),
            line(Role::Assistant, "Hi! How can I help?"),
            line(Role::User, "My sister Ana lives in Porto now."),
        ],
    };
    let facts = note(&req);
    let ana = facts
        .iter()
        .find(|f| f.sentence.contains("Porto"))
        .expect("the fact about Ana");
    assert_eq!(ana.sources, vec![3]);
}

#[test]
fn pronouns_of_a_named_speaker_become_the_name() {
    let req = NoteRequest {
        max_facts: 40,
        messages: vec![
            line(
                Role::User,
                "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
            ),
            line(
                Role::Assistant,
                "Melanie: Wow, that's cool. I'm painting a lake sunrise for my kids.",
            ),
        ],
    };
    let facts = note(&req);
    assert!(
        facts
            .iter()
            .any(|f| f.subject == "Caroline" && f.sentence.contains("on 7 May 2023")),
        "{facts:#?}"
    );
    assert!(
        facts
            .iter()
            .any(|f| f.subject == "Melanie" && f.predicate.starts_with("is paint")),
        "{facts:#?}"
    );
}

#[test]
fn a_decision_is_a_milestone_with_its_number() {
    let req = NoteRequest {
        max_facts: 40,
        messages: vec![line(
            Role::User,
            "Okay, decided: Loam costs $45. But the first 100 orders get it for $39.",
        )],
    };
    let facts = note(&req);
    let f = &facts[0];
    assert_eq!(
        (f.subject.as_str(), f.predicate.as_str(), f.object.as_str()),
        ("Loam", "costs", "$45")
    );
    assert_eq!(f.kind, FactKind::Decided);
}

#[test]
fn questions_and_assistant_suggestions_give_no_facts() {
    let req = NoteRequest {
        max_facts: 40,
        messages: vec![
            line(Role::User, "What should we charge for Loam?"),
            line(
                Role::Assistant,
                "A price of $39 leaves room for shipping and fees.",
            ),
        ],
    };
    assert!(note(&req).is_empty());
}
