//! A selector's command permissions written back as rules (GETUSER's `commands`, ACL
//! LIST, ACL SAVE): `+@all` or `-@all`, then the categories that fit best, then single
//! commands, so that applying the rules gives exactly the same bitmap.

use super::selector::Selector;
use crate::exec::command::ACL_CATEGORIES;
use crate::exec::table::Table;

/// The rules, as Redis's ACLDescribeSelectorCommandRules writes them: categories are
/// chosen greedily (each time the one with the fewest commands that disagree, provided it
/// has more that agree), then single commands and first arguments fix the rest.
pub fn command_rules(sel: &Selector, table: &Table) -> String {
    let mut rules: Vec<String> = Vec::new();
    // `fake` replays the rules as they are written; `rest` is what is left to explain.
    let additive = !sel.future;
    let mut fake = Selector::blank_like(sel);
    fake.set_all(!additive);
    rules.push(if additive { "-@all" } else { "+@all" }.into());
    let mut rest = sel.clone();
    let mut applied = [false; ACL_CATEGORIES.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, done) in applied.iter().enumerate() {
            if *done {
                continue;
            }
            let (on, off) = rest.count_category(table, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some(j);
                min_diff = diff;
                max_same = same;
            }
        }
        let Some(j) = best else { break };
        fake.change_category(table, 1 << j, additive);
        rest.change_category(table, 1 << j, !additive);
        rules.push(format!(
            "{}{}",
            if additive { '+' } else { '-' },
            ACL_CATEGORIES[j]
        ));
        applied[j] = true;
    }
    for id in table.top_level() {
        single(sel, &mut fake, table, id, &mut rules);
        for sub in table.subcommand_ids(id) {
            single(sel, &mut fake, table, sub, &mut rules);
        }
    }
    debug_assert!(
        fake.same_commands(sel),
        "rules {rules:?} do not rebuild the bitmap"
    );
    rules.join(" ")
}

/// The rule for one command whose bit differs from what the rules so far give, and its
/// allowed first arguments.
fn single(sel: &Selector, fake: &mut Selector, table: &Table, id: usize, rules: &mut Vec<String>) {
    let bit = sel.bit(id);
    let name = &table.fullnames[id];
    if bit != fake.bit(id) {
        rules.push(format!("{}{name}", if bit { '+' } else { '-' }));
        fake.change(table, id, bit);
    }
    if !bit {
        for arg in sel.firstargs(id) {
            rules.push(format!("+{name}|{}", String::from_utf8_lossy(arg)));
        }
    }
}
