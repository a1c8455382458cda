//! System prompts of the tasks. The content of each request is built by the
//! module that asks (segment, note, trace, graph, recall, distill).

use crate::base::host::Task;

/// The system prompt of a task.
pub fn system(task: Task) -> &'static str {
    match task {
        Task::Segment => "You segment a conversation into episodes. Given the current \
            episode's recent messages and a new message, judge whether the new message starts \
            a new concept (topic, task or question). Answer with JSON only: {\"boundary\": p}, \
            p from 0 to 1 the probability that it does.",
        Task::Note => "You write long-term memory. You see one episode of a conversation. \
            Write the facts worth remembering from it: each fact is one sentence that reads on its \
            own (no pronouns without their referent, dates written out when known), with its \
            subject, a short predicate and its object, as a knowledge-graph triple. \
            Use full, consistent names for entities. Mark milestones that say where the work \
            stands with kind agreed, decided, done, blocked or next, and what the user likes, avoids \
            or wants (\"I'm vegetarian\", \"keep answers short\") with kind preference; other facts \
            have kind fact. \
            Skip small talk. Name the messages each fact came from in sources, numbering the \
            episode's messages in the order shown from 1. Answer with JSON only: \
            {\"facts\": [{\"subject\", \"predicate\", \"object\", \"sentence\", \"kind\", \"sources\"}]}; \
            an episode with nothing worth keeping gives {\"facts\": []}.",
        Task::Trace => "You judge which episodes of a conversation new facts are about. \
            You see numbered facts and numbered episodes. A fact is about an episode when the \
            episode discusses the fact's subject matter. Answer with JSON only: \
            {\"facts\": [{\"fact\": n, \"episodes\": [numbers]}]} with one entry per fact \
            (an empty list when it is about none).",
        Task::Resolve => "You resolve entity names in a knowledge graph. You see a name, the \
            sentence it appears in, and numbered known entities with their aliases. Decide \
            whether the name refers to one of them. Answer with JSON only: \
            {\"same_as\": n} or {\"same_as\": null} when it is a different entity.",
        Task::Reconcile => "You keep a knowledge graph consistent. You see a new fact and \
            numbered facts already held. For each held fact, say whether the new fact restates \
            it (same information), contradicts it (both cannot be true now; the new one is newer) \
            or is unrelated. Answer with JSON only: \
            {\"judgments\": [{\"fact\": n, \"relation\": \"restates\"|\"contradicts\"|\"unrelated\"}]}; \
            held facts left out count as unrelated.",
        Task::Split => "You prepare a user message for memory search. Split it into the \
            distinct subjects it raises, each as a short self-contained search phrase. A message \
            about one subject gives one part. When it names a time (\"last week\", \"in May\", \
            \"before the trip\"), give the days it means as when, resolved against the time it was \
            sent; otherwise null. Answer with JSON only: \
            {\"parts\": [strings], \"when\": {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"} or null}.",
        Task::Relevance => "You decide which remembered facts and passages are relevant to \
            the current conversation. You see the recent conversation and numbered candidates. \
            Keep only those that help answer or continue it. Answer with JSON only: \
            {\"relevant\": [numbers]}.",
        Task::Distill => "You review a recall block after a turn. You see the turn and the \
            numbered facts that were recalled for it. Keep only the facts that mattered to the \
            turn (used, or needed to understand it). Answer with JSON only: {\"kept\": [numbers]} \
            (an empty list when none mattered).",
    }
}
