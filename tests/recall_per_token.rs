//! Recall per token (issue 30): what a budgeted search carries, and the
//! relevance walk with the offline judge.

mod recall_support;
use engram::testing::block_on;
use engram::Config;
use engram::Task;
use engram::{
    types::recall::Item, types::recall::List, types::recall::SearchFilter,
    types::recall::SearchHit, types::recall::SearchOptions,
};
use recall_support::*;

fn budgeted(r: &mut Rig, query: &str, budget: usize) -> Vec<SearchHit> {
    block_on(r.memory.search(
        query,
        SearchOptions {
            limit: 40,
            budget_tokens: Some(budget),
            ..SearchOptions::default()
        },
    ))
    .unwrap()
}

/// The hit right after `at`, which must be message `answer` (a found
/// question's carried answer).
fn answer_after(hits: &[SearchHit], at: usize, answer: u64) -> &SearchHit {
    hits.get(at + 1)
        .filter(|h| h.item == Item::Message(answer))
        .unwrap_or_else(|| panic!("its answer comes right after it: {hits:#?}"))
}

/// A long reply that says nothing about the question.
fn long_reply() -> String {
    "That sounds lovely. ".repeat(2)
        + &"Moving somewhere new takes time, and the first weeks are always busy with boxes, \
            paperwork and finding where everything is. "
            .repeat(4)
}

#[test]
fn budgeted_search_cuts_a_passage_to_the_message_that_answers() {
    let mut r = rig(config());
    let said = r.turn("My sister Ana lives in Porto now.", &long_reply());
    r.forget(1);
    let whole = block_on(
        r.memory
            .search("Where does Ana live?", SearchOptions::default()),
    )
    .unwrap();
    let passage = whole
        .iter()
        .find(|h| matches!(h.item, Item::Passage(_)))
        .expect("the passage is found");
    let budget = 40;
    assert!(
        engram::base::text::estimate_tokens(&passage.text) > budget,
        "the whole passage does not fit: {}",
        passage.text
    );
    let hits = budgeted(&mut r, "Where does Ana live?", budget);
    let answer = hits
        .iter()
        .find(|h| h.item == Item::Message(said.message))
        .unwrap_or_else(|| panic!("the message that answers fits the budget: {hits:#?}"));
    // With its date, and without the reply's words.
    assert!(
        answer.text.starts_with("[2026-03-02] user: "),
        "{}",
        answer.text
    );
    assert!(answer.text.contains("Porto") && !answer.text.contains("boxes"));
    let used: usize = hits
        .iter()
        .map(|h| engram::base::text::estimate_tokens(&h.text) + engram::recall::HIT_FRAMING)
        .sum();
    assert!(used <= budget);
}

#[test]
fn budgeted_search_does_not_spend_twice_on_a_fact_and_its_message() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    let said = r.turn("My sister Ana lives in Porto now.", &long_reply());
    r.forget(1);
    let hits = budgeted(&mut r, "Ana sister Porto", 200);
    let fact = hits.iter().filter(|h| h.item == Item::Fact(1)).count();
    let message = hits
        .iter()
        .filter(|h| h.item == Item::Message(said.message))
        .count();
    assert_eq!(
        fact + message,
        1,
        "the fact or the message it came from, not both: {hits:#?}"
    );
}

/// A rig whose relevance judge is the offline model's.
fn offline_judged() -> Rig {
    let r = rig(config());
    r.model
        .on_first(Task::Relevance, |req| engram::offline::complete(req).ok());
    r
}

#[test]
fn walk_with_the_offline_judge_keeps_every_search_result() {
    let mut r = offline_judged();
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.facts_for(
        "Saffron prices",
        vec![fact(
            "saffron",
            "rose in price at",
            "the market",
            "Saffron prices rose sharply at the market this year.",
        )],
    );
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.turn("Saffron prices rose sharply at the market.", "Oh no.");
    r.forget(2);
    let search = |r: &mut Rig, walk: bool| -> Vec<Item> {
        block_on(r.memory.search(
            "which dish uses saffron",
            SearchOptions {
                walk,
                ..SearchOptions::default()
            },
        ))
        .unwrap()
        .into_iter()
        .map(|h| h.item)
        .collect()
    };
    let off = search(&mut r, false);
    let on = search(&mut r, true);
    assert!(off.contains(&Item::Fact(2)), "{off:?}");
    assert_eq!(
        on[..off.len().min(on.len())],
        off[..],
        "the walk keeps the fused ranking and adds only after it"
    );
}

#[test]
fn a_question_that_names_a_time_prefers_what_was_said_then() {
    let mut r = rig(config());
    r.turn("I cooked a risotto for dinner.", "Yum.");
    r.forget(1);
    r.clock.advance(40 * DAY);
    let next = block_on(r.memory.episodes()).unwrap().len() as u64 + 1;
    r.turn("I cooked a curry for dinner.", "Yum.");
    r.forget(next);
    let first = |r: &mut Rig, q: &str| -> String {
        let hits = block_on(r.memory.search(q, SearchOptions::default())).unwrap();
        hits.into_iter()
            .map(|h| h.text)
            .find(|t| t.contains("cooked"))
            .unwrap_or_default()
    };
    // Said on 2 March and on 14 April 2026; asked in late April.
    assert!(first(&mut r, "What did I cook in March?").contains("risotto"));
    assert!(first(&mut r, "What did I cook in April?").contains("curry"));
    assert!(first(&mut r, "What did I cook last month?").contains("risotto"));
}

#[test]
fn a_cut_question_carries_its_reply() {
    let mut r = rig(config());
    let asked = r.turn(
        "Which city should we pick for the holidays?",
        &format!(
            "Lisbon: mild in winter, cheap flights, and the trams are fun. {}",
            "Moving somewhere new takes time, and the first weeks are always busy with \
             boxes, paperwork and finding where everything is. "
                .repeat(3)
        ),
    );
    r.forget(1);
    let hits = budgeted(&mut r, "Which city for the holidays?", 60);
    assert!(
        hits.iter().any(|h| h.item == Item::Message(asked.message)),
        "the question is cut from its passage: {hits:#?}"
    );
    let reply = hits
        .iter()
        .find(|h| h.item == Item::Message(asked.message + 1))
        .unwrap_or_else(|| panic!("the reply comes with the question: {hits:#?}"));
    assert!(
        reply.text.contains("Lisbon") && !reply.text.contains("boxes"),
        "{}",
        reply.text
    );
}

#[test]
fn a_whole_passage_takes_at_most_half_the_room_left() {
    let mut r = rig(config());
    let said = r.turn(
        "My sister Ana lives in Porto now.",
        "What a lovely place, with the river, the bridges and the old tiled houses; \
         the food there is wonderful too.",
    );
    r.forget(1);
    let whole = block_on(
        r.memory
            .search("Where does Ana live?", SearchOptions::default()),
    )
    .unwrap()
    .into_iter()
    .find(|h| matches!(h.item, Item::Passage(_)))
    .expect("the passage is found");
    let cost = engram::base::text::estimate_tokens(&whole.text) + engram::recall::HIT_FRAMING;
    // It fits the budget, but takes more than half of it.
    let budget = 60;
    assert!(cost <= budget && 2 * cost > budget, "{cost} tokens");
    let hits = budgeted(&mut r, "Where does Ana live?", budget);
    assert!(
        hits.iter().all(|h| !matches!(h.item, Item::Passage(_))),
        "{hits:#?}"
    );
    assert!(
        hits.iter().any(|h| h.item == Item::Message(said.message)),
        "the message that answers, cut: {hits:#?}"
    );
}

/// A fact about Ana as a note names its source: the user's first message.
fn sourced_ana_fact() -> serde_json::Value {
    let mut f = fact(
        "Ana",
        "relocated to",
        "Porto",
        "Ana, the user's sister, relocated to Porto this year.",
    );
    f["sources"] = serde_json::json!([1]);
    f
}

#[test]
fn a_fact_keeps_the_messages_it_came_from() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![sourced_ana_fact()]);
    let said = r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let facts = block_on(r.memory.facts()).unwrap();
    let ana = facts.iter().find(|f| f.sentence.contains("Porto")).unwrap();
    assert_eq!(ana.sources, vec![said.message]);
    let hits = block_on(
        r.memory
            .search("Where does Ana live?", SearchOptions::default()),
    )
    .unwrap();
    let hit = hits.iter().find(|h| h.item == Item::Fact(ana.id)).unwrap();
    assert_eq!(hit.sources, vec![said.message], "search shows them");
}

#[test]
fn a_note_naming_a_message_outside_its_episode_is_refused() {
    let mut r = rig(config());
    let mut f = sourced_ana_fact();
    f["sources"] = serde_json::json!([9]);
    r.facts_for("sister Ana", vec![f]);
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(1);
    let facts = block_on(r.memory.facts()).unwrap();
    assert!(
        facts.iter().all(|f| !f.sentence.contains("Porto")),
        "no fact from a refused note: {facts:?}"
    );
}

#[test]
fn budgeted_search_does_not_spend_twice_on_a_fact_and_its_source_message() {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![sourced_ana_fact()]);
    let said = r.turn("My sister Ana lives in Porto now.", &long_reply());
    r.forget(1);
    let hits = budgeted(&mut r, "Where does my sister Ana live?", 200);
    let fact = hits
        .iter()
        .find(|h| matches!(h.item, Item::Fact(_)))
        .unwrap_or_else(|| panic!("the fact is returned: {hits:#?}"));
    assert_eq!(fact.sources, vec![said.message]);
    // Its words differ from the message's (so only its source tells).
    let again: Vec<&SearchHit> = hits
        .iter()
        .filter(|h| match h.item {
            Item::Message(m) => m == said.message,
            Item::Passage(_) => h.text.contains("lives in Porto"),
            Item::Fact(_) => false,
        })
        .collect();
    assert!(
        again.is_empty(),
        "the message the fact came from is not returned too: {hits:#?}"
    );
}

/// Ana lived in Porto, then moved to Lisbon (the newer fact retires the
/// older).
fn moved_rig() -> Rig {
    let mut r = rig(config());
    r.facts_for(
        "lives in Porto",
        vec![fact("Ana", "lives in", "Porto", "Ana lives in Porto.")],
    );
    r.facts_for(
        "moved to Lisbon",
        vec![fact("Ana", "lives in", "Lisbon", "Ana moved to Lisbon.")],
    );
    r.model.on(Task::Reconcile, |req| {
        let contradicts =
            req.content.contains("Lisbon") && req.content.contains("1. Ana lives in Porto");
        Some(
            serde_json::json!({"judgments": if contradicts {
                vec![serde_json::json!({"fact": 1, "relation": "contradicts"})]
            } else {
                vec![]
            }})
            .to_string(),
        )
    });
    r.turn("Ana lives in Porto.", "Nice.");
    r.clock.advance(DAY);
    r.turn("Ana moved to Lisbon last week.", "Big change.");
    r.forget(2);
    let facts = block_on(r.memory.facts()).unwrap();
    assert_eq!(facts[0].retired.as_ref().map(|x| x.by), Some(2));
    r
}

#[test]
fn a_changed_fact_carries_its_old_value_when_the_room_allows() {
    let mut r = moved_rig();
    let hits = budgeted(&mut r, "Who moved to Lisbon?", 200);
    assert!(hits.iter().all(|h| h.item != Item::Fact(1)), "{hits:#?}");
    let current = hits
        .iter()
        .find(|h| h.item == Item::Fact(2))
        .unwrap_or_else(|| panic!("the current fact: {hits:#?}"));
    assert_eq!(
        current.text,
        "Ana moved to Lisbon.\n(since 2026-03-03; before: Ana lives in Porto.)"
    );
    // Without the room, the fact alone: the line never takes an item's room.
    let first = |r: &mut Rig, budget: usize| -> String {
        let hits = block_on(r.memory.search(
            "Who moved to Lisbon?",
            SearchOptions {
                limit: 1,
                budget_tokens: Some(budget),
                ..SearchOptions::default()
            },
        ))
        .unwrap();
        assert_eq!(hits[0].item, Item::Fact(2), "{hits:#?}");
        hits[0].text.clone()
    };
    let alone =
        engram::base::text::estimate_tokens("Ana moved to Lisbon.") + engram::recall::HIT_FRAMING;
    assert_eq!(first(&mut r, alone), "Ana moved to Lisbon.");
    assert_eq!(first(&mut r, alone + 20), current.text);
}

#[test]
fn the_time_the_model_reads_in_a_question_prefers_what_was_said_then() {
    let mut r = rig(config());
    r.turn("I cooked a risotto for dinner.", "Yum.");
    r.forget(1);
    r.clock.advance(40 * DAY);
    let next = block_on(r.memory.episodes()).unwrap().len() as u64 + 1;
    r.turn("I cooked a curry for dinner.", "Yum.");
    r.forget(next);
    // No rule reads "around the time my sister visited": the model does.
    let sent = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
    let seen = sent.clone();
    r.model.on(Task::Split, move |req| {
        *seen.borrow_mut() = req.content.clone();
        Some(
            serde_json::json!({"parts": ["what I cooked for dinner"],
                "when": {"from": "2026-03-01", "to": "2026-03-07"}})
            .to_string(),
        )
    });
    let q = "What was the dish I cooked for dinner around the time my sister came to visit us";
    let hits = block_on(r.memory.search(q, SearchOptions::default())).unwrap();
    let first = hits
        .iter()
        .map(|h| h.text.as_str())
        .find(|t| t.contains("cooked"))
        .unwrap_or_default();
    assert!(first.contains("risotto"), "{hits:#?}");
    assert!(
        sent.borrow().starts_with("Sent at 2026-"),
        "the request says when: {}",
        sent.borrow()
    );
}

#[test]
fn a_split_time_that_is_not_a_date_is_refused() {
    let mut r = rig(config());
    r.turn("I cooked a risotto for dinner.", "Yum.");
    r.forget(1);
    r.model.on(Task::Split, |_| {
        Some(
            serde_json::json!({"parts": ["dinner"], "when": {"from": "2026-02-30", "to": "2026-03-07"}})
                .to_string(),
        )
    });
    let q = "What was the dish I cooked for dinner around the time my sister came to visit us";
    block_on(r.memory.search(q, SearchOptions::default())).unwrap();
    let health = block_on(r.memory.stats()).unwrap();
    assert!(
        health.model.failed.get("split").copied().unwrap_or(0) > 0,
        "{health:?}"
    );
}

#[test]
fn a_preference_is_recalled_for_a_request_it_bears_on() {
    let mut r = rig(config());
    let mut vegetarian = fact("user", "is", "vegetarian", "The user is vegetarian.");
    vegetarian["kind"] = serde_json::json!("preference");
    r.facts_for("vegetarian", vec![vegetarian]);
    r.facts_for(
        "sister Ana",
        vec![fact("Ana", "lives in", "Porto", "Ana lives in Porto.")],
    );
    r.turn("I'm vegetarian these days.", "Good to know.");
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.forget(2);
    let facts = block_on(r.memory.facts()).unwrap();
    let pref = facts
        .iter()
        .find(|f| f.kind == engram::FactKind::Preference)
        .expect("the preference is noted");
    let found = |r: &mut Rig, q: &str| -> bool {
        block_on(r.memory.search(q, SearchOptions::default()))
            .unwrap()
            .iter()
            .any(|h| h.item == Item::Fact(pref.id))
    };
    assert!(
        found(&mut r, "Can you suggest a recipe for tonight?"),
        "a request it bears on"
    );
    assert!(
        !found(&mut r, "Where does Ana live?"),
        "not a question it has nothing to do with"
    );
}

#[test]
fn within_a_budget_a_fact_whose_source_passage_is_found_comes_first() {
    let mut r = rig(config());
    // A fact that names the message it came from, in words the question
    // barely shares.
    let mut sourced = fact(
        "Ana",
        "relocated to",
        "Porto",
        "Ana, the user's sister, relocated to Porto this year.",
    );
    sourced["sources"] = serde_json::json!([1]);
    r.facts_for("sister Ana", vec![sourced]);
    // A fact sharing more of the question's words, with no source named.
    r.facts_for(
        "new flat",
        vec![fact(
            "Ana",
            "lives in",
            "a flat",
            "Ana lives in a flat near a river.",
        )],
    );
    r.turn("My sister Ana lives in Porto now.", "Nice.");
    r.turn("Ana called me yesterday from her new flat.", "Lovely.");
    r.forget(2);
    let facts = block_on(r.memory.facts()).unwrap();
    let id = |word: &str| {
        facts
            .iter()
            .find(|f| f.sentence.contains(word))
            .map(|f| Item::Fact(f.id))
            .unwrap()
    };
    let (porto, flat) = (id("Porto"), id("flat"));
    let q = "Where does Ana live?";
    let count: Vec<Item> = block_on(r.memory.search(q, SearchOptions::default()))
        .unwrap()
        .iter()
        .map(|h| h.item)
        .collect();
    let place = |items: &[Item], i: Item| items.iter().position(|&x| x == i);
    assert!(
        place(&count, flat) < place(&count, porto),
        "by their own lists the unsourced fact ranks first: {count:?}"
    );
    // Room for one of the two facts.
    let hits = budgeted(&mut r, q, 18);
    assert!(
        hits.iter().any(|h| h.item == porto),
        "the fact the found passage supports: {hits:#?}"
    );
}

#[test]
fn within_a_budget_a_fact_a_cut_passage_quotes_keeps_its_rank() {
    let mut r = rig(config());
    r.facts_for(
        "flat!",
        vec![fact(
            "Ana",
            "rents",
            "a flat",
            "Ana rents a flat by the river in Porto.",
        )],
    );
    r.facts_for(
        "hiking",
        vec![fact("Ana", "likes", "hiking", "Ana likes hiking.")],
    );
    // A fact the question's words find first (its episode's words are
    // others), so that the quoting passage ranks above the fact it quotes.
    r.facts_for(
        "Balcony",
        vec![fact("Ana", "has", "a balcony", "Ana's flat has a balcony.")],
    );
    // The passage quotes the fact (most of its words), but only its first
    // message holds the question's words.
    let reply = "Porto by the river, and the rent is fair!";
    let said = r.turn("Ana's flat!", reply);
    r.turn("Ana took up hiking on weekends.", "Good for her.");
    r.turn("Balcony plants need water.", "They do.");
    r.forget(3);
    let facts = block_on(r.memory.facts()).unwrap();
    let id = |word: &str| {
        facts
            .iter()
            .find(|f| f.sentence.contains(word))
            .map(|f| Item::Fact(f.id))
            .unwrap()
    };
    let (flat, hiking) = (id("rents"), id("hiking"));
    let hits = budgeted(&mut r, "What about Ana's flat?", 40);
    let items: Vec<Item> = hits.iter().map(|h| h.item).collect();
    assert!(
        !items.contains(&Item::Message(said.message + 1))
            && hits.iter().all(|h| !h.text.contains("Porto by the river")),
        "the reply that holds the fact's words does not come: {hits:#?}"
    );
    let place = |i: Item| items.iter().position(|&x| x == i);
    assert!(
        place(flat).is_some() && place(flat) < place(hiking),
        "the fact keeps its place above a weaker one: {hits:#?}"
    );
}

#[test]
fn within_a_budget_a_second_fact_from_the_same_message_comes_after_new_ones() {
    let mut r = rig(config());
    // A note names its sources by their place in the episode it reads.
    let sourced = |sentence: &str, object: &str, message: u64| {
        let mut f = fact("Ana", "is", object, sentence);
        f["sources"] = serde_json::json!([message]);
        f
    };
    r.facts_for(
        "nurse",
        vec![
            sourced("Ana lives in Porto.", "in Porto", 1),
            sourced("Ana works as a nurse in Porto.", "a nurse", 1),
        ],
    );
    r.facts_for(
        "Miso",
        vec![sourced("Ana has a cat called Miso.", "a cat owner", 1)],
    );
    r.turn(
        "My sister Ana lives in Porto and works as a nurse.",
        "Nice.",
    );
    r.turn("Ana has a cat called Miso.", "Cute.");
    r.forget(2);
    let facts = block_on(r.memory.facts()).unwrap();
    let id = |word: &str| {
        facts
            .iter()
            .find(|f| f.sentence.contains(word))
            .map(|f| Item::Fact(f.id))
            .unwrap()
    };
    let (nurse, cat) = (id("nurse"), id("cat"));
    let q = "What about Ana in Porto?";
    let count: Vec<Item> = block_on(r.memory.search(q, SearchOptions::default()))
        .unwrap()
        .iter()
        .map(|h| h.item)
        .collect();
    let place = |items: &[Item], i: Item| items.iter().position(|&x| x == i);
    assert!(
        place(&count, nurse) < place(&count, cat),
        "by their lists the second fact of the first message ranks higher: {count:?}"
    );
    let hits = budgeted(&mut r, q, 200);
    let items: Vec<Item> = hits.iter().map(|h| h.item).collect();
    assert!(
        place(&items, cat).is_some() && place(&items, cat) < place(&items, nurse),
        "the fact from another message first: {hits:#?}"
    );
}

#[test]
fn within_a_budget_a_whole_passage_ending_with_a_question_carries_its_answer() {
    // Passages of at most 30 tokens: the question is one passage, its
    // answer (same episode) the next.
    let mut r = rig(Config {
        passage_tokens: 30,
        ..config()
    });
    let asked = r.turn(
        "We keep going back and forth about the trip. Which city should we pick for the holidays?",
        "Lisbon, for its mild winter and cheap flights; the trams are fun too.",
    );
    r.forget(1);
    let hits = budgeted(&mut r, "Which city for the holidays?", 200);
    let at = hits
        .iter()
        .position(|h| matches!(h.item, Item::Passage(_)) && h.sources == vec![asked.message])
        .unwrap_or_else(|| panic!("the question's passage is returned whole: {hits:#?}"));
    let answer = answer_after(&hits, at, asked.message + 1);
    assert!(answer.text.contains("Lisbon"), "{}", answer.text);
}

#[test]
fn within_a_budget_a_message_in_view_asking_a_question_carries_its_answer() {
    let mut r = rig(Config {
        ceiling_tokens: 8_000,
        ..config()
    });
    r.turn("The garden needs watering twice a week now.", "Noted.");
    r.turn("My sister Ana lives in Porto now.", "How nice.");
    let asked = r.turn(
        "Which city should we pick for the holidays?",
        "Lisbon, for its mild winter and cheap flights.",
    );
    r.turn("The car is due for its service in May.", "I'll remind you.");
    let hits = budgeted(&mut r, "Which city for the holidays?", 200);
    let at = hits
        .iter()
        .position(|h| h.item == Item::Message(asked.message))
        .unwrap_or_else(|| panic!("the question in view is found by its words: {hits:#?}"));
    let answer = answer_after(&hits, at, asked.message + 1);
    assert!(answer.text.contains("Lisbon"), "{}", answer.text);
    assert!(answer.text.starts_with('['), "dated: {}", answer.text);
}

#[test]
fn within_a_budget_a_carried_answer_meets_the_filter_too() {
    let mut r = rig(Config {
        ceiling_tokens: 8_000,
        ..config()
    });
    r.turn("The garden needs watering twice a week now.", "Noted.");
    let asked = r.turn(
        "Which city should we pick for the holidays?",
        "Lisbon, for its mild winter and cheap flights.",
    );
    r.turn("The car is due for its service in May.", "I'll remind you.");
    let messages = block_on(r.memory.messages()).unwrap();
    let question_at = messages[asked.message as usize - 1].at;
    // Only what was said up to the question: its answer, a minute later,
    // is not returned, carried or not.
    let hits = block_on(r.memory.search(
        "Which city for the holidays?",
        SearchOptions {
            limit: 40,
            budget_tokens: Some(200),
            filter: SearchFilter {
                to: Some(question_at),
                ..SearchFilter::default()
            },
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    assert!(
        hits.iter().any(|h| h.item == Item::Message(asked.message)),
        "the question is found: {hits:#?}"
    );
    assert!(
        hits.iter()
            .all(|h| h.item != Item::Message(asked.message + 1)),
        "the answer is after the filter's end: {hits:#?}"
    );
}

/// "March 2, 2026" for a time in ms.
fn named_day(ms: i64) -> String {
    let d = engram::base::text::format_date(ms);
    let (y, m, day) = (&d[0..4], &d[5..7], &d[8..10]);
    let month = engram::base::text::MONTH_NAMES[m.parse::<usize>().unwrap() - 1];
    format!("{month} {}, {y}", day.trim_start_matches('0'))
}

/// Forty days of painting, each better matched by a question's words than
/// the one thing said on day 21 (the sketch, returned): the searches of all
/// time rank that one below their depth.
fn forty_days_and_a_sketch() -> (Rig, engram::Message) {
    let mut r = rig(config());
    for i in 0..40 {
        r.turn(
            &format!("Melanie painted a lake sunrise, painting number {i}."),
            "Lovely.",
        );
        r.clock.advance(DAY);
        if i == 20 {
            r.turn("Melanie showed me a horse sketch.", "Nice.");
            r.clock.advance(DAY);
        }
    }
    let sketch = block_on(r.memory.messages())
        .unwrap()
        .into_iter()
        .find(|m| m.content.contains("horse sketch"))
        .unwrap();
    (r, sketch)
}

#[test]
fn a_question_naming_a_day_is_answered_from_what_was_said_that_day() {
    let (mut r, sketch) = forty_days_and_a_sketch();
    let question = format!("What did Melanie paint on {}?", named_day(sketch.at));
    let hits = block_on(r.memory.search(&question, SearchOptions::default())).unwrap();
    assert!(
        hits.iter().any(|h| h.sources.contains(&sketch.id)),
        "{question}: {hits:#?}"
    );
    assert!(hits[0].sources.contains(&sketch.id), "{hits:#?}");
}

#[test]
fn a_message_in_view_is_found_by_meaning_too() {
    let mut r = rig(config());
    r.turn("My photographs from the trip are framed.", "Lovely.");
    r.turn("The plumber comes on Thursday.", "Noted.");
    let framed = r.view().items.iter().find_map(|i| i.message).unwrap();
    // No word of the question is in the message ("photography" is not
    // "photographs"), but its meaning is near.
    let hits = block_on(r.memory.search(
        "Any news about photography?",
        SearchOptions {
            include_in_view: true,
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    let hit = hits
        .iter()
        .find(|h| h.item == Item::Message(framed))
        .unwrap_or_else(|| panic!("the framed photograph is found: {hits:#?}"));
    assert!(
        hit.hits.iter().all(|x| x.list == List::ViewMeaning),
        "{hit:#?}"
    );
}

#[test]
fn a_search_embeds_at_most_a_ceiling_of_messages_in_view_however_many_threads() {
    use engram::testing::{ManualClock, MemoryStore, Recorded, RecordingModel, ScriptedModel};
    use engram::Memory;
    use engram::NewMessage;
    let model = RecordingModel::new(ScriptedModel::new());
    let clock = ManualClock::at(T0);
    let ceiling = 300;
    let config = Config {
        ceiling_tokens: ceiling,
        ..Config::default()
    };
    let mut memory = block_on(Memory::open(
        "m",
        MemoryStore::new(),
        model.clone(),
        clock.clone(),
        config,
    ))
    .unwrap();
    // Twelve threads, each holding about 100 tokens in view: four
    // ceilings' worth in all.
    let long = "we talked about the garden and the fence and the tulips ".repeat(4);
    for t in 0..12 {
        for (i, text) in [format!("thread {t}: {long}"), format!("reply {t}: {long}")]
            .into_iter()
            .enumerate()
        {
            clock.advance(MIN);
            let m = match i {
                0 => NewMessage::user(text),
                _ => NewMessage::assistant(text),
            };
            block_on(memory.add_message(m.in_thread(format!("t{t}")))).unwrap();
        }
    }
    let before = model.transcript().len();
    block_on(memory.search("tulips", SearchOptions::default())).unwrap();
    let embedded: Vec<String> = model.transcript()[before..]
        .iter()
        .filter_map(|r| match r {
            Recorded::Embed { texts, .. } => Some(texts.clone()),
            _ => None,
        })
        .filter(|texts| texts.iter().any(|t| t.contains("garden")))
        .flatten()
        .collect();
    let messages = block_on(memory.messages()).unwrap();
    let tokens: usize = embedded
        .iter()
        .map(|t| messages.iter().find(|m| m.content == *t).unwrap().tokens)
        .sum();
    assert!(
        !embedded.is_empty() && tokens <= ceiling,
        "{tokens} tokens: {embedded:#?}"
    );
    assert!(
        embedded.len() < messages.len(),
        "{} of {}",
        embedded.len(),
        messages.len()
    );
    // The latest first: the last thread's messages are among them.
    assert!(
        embedded.iter().any(|t| t.starts_with("reply 11:")),
        "{embedded:#?}"
    );
}

#[test]
fn a_question_before_a_day_is_answered_from_before_it() {
    // The sketch is the only thing said on the day the question names.
    let (mut r, sketch) = forty_days_and_a_sketch();
    let day = named_day(sketch.at);
    // "Before" the day is everything until it, not the day itself.
    let question = format!("What did Melanie paint before {day}?");
    let hits = block_on(r.memory.search(&question, SearchOptions::default())).unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits[0].said_at < sketch.at - sketch.at.rem_euclid(DAY),
        "{question}: {hits:#?}"
    );
    // "After" it: from the day after to now.
    let question = format!("What did Melanie paint after {day}?");
    let hits = block_on(r.memory.search(&question, SearchOptions::default())).unwrap();
    assert!(
        hits[0].said_at >= sketch.at - sketch.at.rem_euclid(DAY) + DAY,
        "{question}: {hits:#?}"
    );
}

#[test]
fn a_question_about_the_asker_prefers_what_the_user_said() {
    // Both facts in every list (the scripted embedder's cosines are low).
    let mut r = rig(Config {
        min_cosine: -1.0,
        ..config()
    });
    let mut told = fact(
        "Ana",
        "lives in",
        "Porto",
        "Ana, the user's sister, lives in Porto.",
    );
    told["sources"] = serde_json::json!([1]);
    // The assistant's general remark shares more of the question's words.
    let mut remark = fact(
        "sisters",
        "often live in",
        "Lisbon",
        "Many sisters live in Lisbon, where sisters live near family.",
    );
    remark["sources"] = serde_json::json!([2]);
    r.facts_for("sister Ana", vec![told, remark]);
    r.turn(
        "My sister Ana lives in Porto.",
        "Many sisters live in Lisbon, where sisters live near family.",
    );
    r.forget(1);
    let facts = block_on(r.memory.facts()).unwrap();
    let id = |s: &str| facts.iter().find(|f| f.sentence.contains(s)).unwrap().id;
    let (told, remark) = (id("Porto"), id("Lisbon"));
    let deep = SearchOptions {
        limit: 40,
        ..SearchOptions::default()
    };
    let place = |hits: &[SearchHit], f: u64| hits.iter().position(|h| h.item == Item::Fact(f));
    // "my sister": what the user said comes before the assistant's remark.
    let hits = block_on(r.memory.search("Where does my sister live?", deep.clone())).unwrap();
    let told_at = place(&hits, told).unwrap_or_else(|| panic!("{hits:#?}"));
    assert!(
        place(&hits, remark).is_none_or(|m| told_at < m),
        "{hits:#?}"
    );
    // Without "my", the words decide: the remark says more of them.
    let hits = block_on(r.memory.search("Where do sisters live?", deep)).unwrap();
    let remark_at = place(&hits, remark).unwrap_or_else(|| panic!("{hits:#?}"));
    assert!(
        place(&hits, told).is_none_or(|t| remark_at < t),
        "{hits:#?}"
    );
}

/// Three facts about a family's weekends: two share "kids" with the
/// question "What has Mel done with the family?", the third only "kids".
fn family_rig() -> Rig {
    let mut r = rig(config());
    r.facts_for(
        "weekend",
        vec![
            fact(
                "Mel",
                "spends weekends with",
                "her kids",
                "Mel spends family weekends with the kids.",
            ),
            fact(
                "Mel",
                "goes camping with",
                "her husband",
                "Mel goes on family camping trips with the kids.",
            ),
            // Not a word of the question, nor an entity of the two above.
            fact(
                "the dinosaur museum",
                "delighted",
                "the twins",
                "The kids loved the dinosaur museum.",
            ),
        ],
    );
    r.turn("How was the weekend?", "Busy, thanks.");
    r.forget(1);
    r
}

#[test]
fn a_deep_search_finds_what_its_best_hits_share_and_the_question_does_not_say() {
    let mut r = family_rig();
    let facts = block_on(r.memory.facts()).unwrap();
    let museum = facts
        .iter()
        .find(|f| f.sentence.contains("museum"))
        .unwrap()
        .id;
    let found = |hits: &[SearchHit]| hits.iter().any(|h| h.item == Item::Fact(museum));
    let question = "What has Mel done with the family?";
    // A search by count and a deep budget: the two best hits share "kids",
    // which finds the museum.
    let hits = block_on(r.memory.search(question, SearchOptions::default())).unwrap();
    assert!(found(&hits), "{hits:#?}");
    let hits = budgeted(&mut r, question, 1000);
    assert!(found(&hits), "{hits:#?}");
    let hit = hits.iter().find(|h| h.item == Item::Fact(museum)).unwrap();
    assert!(
        hit.hits
            .iter()
            .all(|h| h.list == List::FactWords && h.query == 1),
        "found by the expanded question (numbered past the parts): {:?}",
        hit.hits
    );
    // A tight budget carries the best few: no expansion.
    let hits = budgeted(&mut r, question, 200);
    assert!(!found(&hits), "{hits:#?}");
}

#[test]
fn within_a_budget_a_chat_turn_carries_only_its_sentence_that_answers() {
    let mut r = rig(config());
    // A turn of conversation: under the length of a long message, over the
    // length of a sentence, and most of it is not what a question asks.
    let turn = "Oh, thanks for asking, it has been a long and busy week at work. \
                We finally took the kids to the dinosaur museum on Sunday. \
                Anyway, how have you been lately?";
    let tokens = engram::base::text::estimate_tokens(turn);
    assert!((30..60).contains(&tokens), "{tokens} tokens");
    let said = r.turn(turn, &long_reply());
    r.forget(1);
    let hits = budgeted(&mut r, "Which museum did the kids visit?", 1000);
    let piece = hits
        .iter()
        .find(|h| h.item == Item::Message(said.message))
        .unwrap_or_else(|| panic!("the turn is cut from its passage: {hits:#?}"));
    assert!(
        piece.text.contains("dinosaur museum")
            && !piece.text.contains("busy week")
            && !piece.text.contains("how have you been"),
        "{}",
        piece.text
    );
}

#[test]
fn a_recall_block_finds_what_its_best_hits_share_and_explains_it() {
    let mut r = family_rig();
    r.all_relevant();
    let museum = block_on(r.memory.facts())
        .unwrap()
        .iter()
        .find(|f| f.sentence.contains("museum"))
        .unwrap()
        .id;
    let added = r.ask("What has Mel done with the family?");
    let id = added.recall.expect("recalled");
    let b = block_on(r.memory.recalls()).unwrap()[id as usize - 1].clone();
    let item = b
        .items
        .iter()
        .find(|i| i.item == Item::Fact(museum))
        .unwrap_or_else(|| panic!("the block holds the museum: {:#?}", b.items));
    // Found by the message expanded by its best hits' words ("kids"),
    // numbered one past the last part.
    assert!(b.parts.is_empty(), "{:?}", b.parts);
    assert!(
        !item.hits.is_empty() && item.hits.iter().all(|h| h.query == 1),
        "{:?}",
        item.hits
    );
    let explained = block_on(r.memory.explain_block(id)).unwrap();
    let e = explained
        .iter()
        .find(|e| e.item == Item::Fact(museum))
        .unwrap();
    assert!(
        e.summary
            .contains("(the message expanded by its best hits' shared words)"),
        "{}",
        e.summary
    );
}
