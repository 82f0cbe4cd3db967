//! The smallest change that turns the menu the tray shows into the one it should show.
//!
//! Replacing the whole menu makes the platform tear down and re-export every item (with 60 live
//! runtimes, one submenu each, that took a tray host 50-200 ms to hear of), and it swaps every item
//! under a user who has the menu open. Nearly every inventory change touches one line: an agent's
//! state, a title, a check mark. So the tray compares what it shows with what it should show, line
//! by line, matched by what each line is for ([`Key`]), and changes only the lines that differ:
//! a text, a check mark, a submenu's items, or a line added or removed (a line that moves is
//! both). A submenu whose title changes (an agent's state) is replaced whole: one runtime's few
//! items, not the menu.

use std::collections::HashMap;

use similar::algorithms::{myers, Capture, Replace};
use similar::DiffTag;

use super::{Entry, MenuId};

/// One change to a menu, applied in order: positions are those of the menu as the edits before
/// it left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit<'a> {
    /// Remove the line at `at`.
    Remove {
        /// Its position.
        at: usize,
    },
    /// Put a new line for `entry` at `at`.
    Insert {
        /// Its position.
        at: usize,
        /// What it shows.
        entry: &'a Entry,
    },
    /// Change the text of the item or check item at `at` (a submenu is replaced instead).
    Label {
        /// Its position.
        at: usize,
        /// The new text.
        label: &'a str,
    },
    /// Grey out, or no longer grey out, the item at `at`.
    Enabled {
        /// Its position.
        at: usize,
        /// Whether it can be clicked.
        enabled: bool,
    },
    /// Check or uncheck the check item at `at`.
    Checked {
        /// Its position.
        at: usize,
        /// Whether it shows its check mark.
        checked: bool,
    },
    /// Apply `edits` to the items of the submenu at `at`.
    Within {
        /// The submenu's position.
        at: usize,
        /// What changes inside it.
        edits: Vec<Edit<'a>>,
    },
}

/// What a line is for, whatever it says: the same key before and after means "the same line,
/// perhaps with other text". Its `usize` is how many earlier lines have the same [`Line`]: it
/// tells apart lines that have no name of their own (the separators), and guards against two
/// lines with one id.
type Key<'a> = (Line<'a>, usize);

/// The part of a line's key that the line itself gives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Line<'a> {
    Item(&'a MenuId),
    Check(&'a MenuId),
    Submenu(&'a str),
    Separator,
}

fn keys(entries: &[Entry]) -> Vec<Key<'_>> {
    let mut seen: HashMap<Line<'_>, usize> = HashMap::with_capacity(entries.len());
    entries
        .iter()
        .map(|entry| {
            let line = match entry {
                Entry::Item { id, .. } => Line::Item(id),
                Entry::Check { id, .. } => Line::Check(id),
                Entry::Submenu { runtime, .. } => Line::Submenu(runtime),
                Entry::Separator => Line::Separator,
            };
            let earlier = seen.entry(line.clone()).or_insert(0);
            let key = (line, *earlier);
            *earlier += 1;
            key
        })
        .collect()
}

/// The edits that turn a menu showing `old` into one showing `new`; none when they are equal.
///
/// The lines are matched by their keys with `similar`'s diff (Myers): linear in the menu's length
/// when few lines come, go or move, so the usual change (one line's text) costs the tray's main
/// thread about as much as comparing the menus. A line that moves is removed and inserted again.
pub fn edits<'a>(old: &[Entry], new: &'a [Entry]) -> Vec<Edit<'a>> {
    let (old_keys, new_keys) = (keys(old), keys(new));
    let mut edits = Vec::new();
    // Where the next edit applies: the lines before it already are the new menu's first `at`.
    let mut at = 0;
    // `Replace` merges a deletion and the insertion beside it, so a line that changes kind (an
    // item that became a submenu) is removed before its successor is inserted, in one place.
    let mut ops = Replace::new(Capture::new());
    let Ok(()) = myers::diff(&mut ops, &old_keys, 0..old.len(), &new_keys, 0..new.len());
    for op in ops.into_inner().into_ops() {
        let (was, now) = (&old[op.old_range()], &new[op.new_range()]);
        if op.tag() == DiffTag::Equal {
            for (shown, entry) in was.iter().zip(now) {
                if replaced(shown, entry) {
                    edits.extend([Edit::Remove { at }, Edit::Insert { at, entry }]);
                } else {
                    update(at, shown, entry, &mut edits);
                }
                at += 1;
            }
        } else {
            // Lines deleted, inserted, or both: the old ones go, the new ones come.
            edits.extend(was.iter().map(|_| Edit::Remove { at }));
            for entry in now {
                edits.push(Edit::Insert { at, entry });
                at += 1;
            }
        }
    }
    edits
}

/// The edits of one line whose key is unchanged and that is not [`replaced`].
fn update<'a>(at: usize, old: &Entry, new: &'a Entry, edits: &mut Vec<Edit<'a>>) {
    match (old, new) {
        (
            Entry::Item {
                label: was,
                enabled: was_on,
                ..
            },
            Entry::Item { label, enabled, .. },
        ) => {
            relabel(at, was, label, edits);
            if was_on != enabled {
                edits.push(Edit::Enabled {
                    at,
                    enabled: *enabled,
                });
            }
        }
        (
            Entry::Check {
                label: was,
                checked: was_on,
                ..
            },
            Entry::Check { label, checked, .. },
        ) => {
            relabel(at, was, label, edits);
            if was_on != checked {
                edits.push(Edit::Checked {
                    at,
                    checked: *checked,
                });
            }
        }
        (Entry::Submenu { entries: were, .. }, Entry::Submenu { entries, .. }) => {
            let inside = self::edits(were, entries);
            if !inside.is_empty() {
                edits.push(Edit::Within { at, edits: inside });
            }
        }
        (Entry::Separator, Entry::Separator) => {}
        _ => unreachable!("replaced() sends lines of two kinds to be replaced"),
    }
}

fn relabel<'a>(at: usize, was: &str, label: &'a str, edits: &mut Vec<Edit<'a>>) {
    if was != label {
        edits.push(Edit::Label { at, label });
    }
}

/// Whether the line for `old` must be replaced by a new one rather than changed: its kind
/// changed (equal keys mean equal kinds, but nothing relies on it), or it is a submenu whose
/// title changed. A submenu's title cannot be changed in place: muda sets it on the GtkMenuItem,
/// whose child is a box holding the label, and GTK ignores a label set on an item whose child is
/// not a label.
fn replaced(old: &Entry, new: &Entry) -> bool {
    match (old, new) {
        (Entry::Submenu { label: was, .. }, Entry::Submenu { label, .. }) => was != label,
        (Entry::Item { .. }, Entry::Item { .. })
        | (Entry::Check { .. }, Entry::Check { .. })
        | (Entry::Separator, Entry::Separator) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `edits` to `menu` as the platform does: the reference the tray's own applier
    /// follows, so that "these edits turn old into new" can be checked without a display.
    fn apply(menu: &mut Vec<Entry>, edits: &[Edit<'_>]) {
        for edit in edits {
            match edit {
                Edit::Remove { at } => {
                    menu.remove(*at);
                }
                Edit::Insert { at, entry } => menu.insert(*at, (*entry).clone()),
                Edit::Label { at, label: text } => match &mut menu[*at] {
                    Entry::Item { label, .. }
                    | Entry::Check { label, .. }
                    | Entry::Submenu { label, .. } => *label = (*text).to_owned(),
                    Entry::Separator => panic!("a separator has no label: {edit:?}"),
                },
                Edit::Enabled { at, enabled: to } => match &mut menu[*at] {
                    Entry::Item { enabled, .. } => *enabled = *to,
                    other => panic!("{other:?} cannot be greyed out"),
                },
                Edit::Checked { at, checked: to } => match &mut menu[*at] {
                    Entry::Check { checked, .. } => *checked = *to,
                    other => panic!("{other:?} has no check mark"),
                },
                Edit::Within { at, edits } => match &mut menu[*at] {
                    Entry::Submenu { entries, .. } => apply(entries, edits),
                    other => panic!("{other:?} is not a submenu"),
                },
            }
        }
    }

    fn item(id: MenuId, label: &str) -> Entry {
        Entry::Item {
            id,
            label: label.into(),
            enabled: true,
        }
    }

    fn attach(name: &str) -> Entry {
        item(
            MenuId::Attach(format!("lre_{name}")),
            &format!("Attach {name} (demo)"),
        )
    }

    fn agent(name: &str, state: &str, actions: &[&str]) -> Entry {
        let id = format!("lre_{name}");
        let mut entries = vec![item(MenuId::Attach(id.clone()), "Attach")];
        entries.extend(actions.iter().map(|action| {
            item(
                MenuId::Act {
                    id: id.clone(),
                    action: (*action).into(),
                    revision: 1,
                },
                action,
            )
        }));
        Entry::Submenu {
            runtime: id,
            label: format!("{name} \u{2014} {state}"),
            entries,
        }
    }

    fn app_items(alerts: bool) -> Vec<Entry> {
        vec![
            Entry::Separator,
            item(MenuId::Open, "Open Supercode Tray"),
            Entry::Check {
                id: MenuId::AgentAlerts,
                label: "Notify me when an agent needs me".into(),
                checked: alerts,
            },
            Entry::Separator,
            item(MenuId::Quit, "Quit"),
        ]
    }

    fn menu(lines: Vec<Entry>) -> Vec<Entry> {
        let mut menu = lines;
        menu.extend(app_items(true));
        menu
    }

    /// Checks that the edits from `old` to `new` turn the one into the other, and returns them.
    fn check<'a>(old: &[Entry], new: &'a [Entry]) -> Vec<Edit<'a>> {
        let edits = edits(old, new);
        let mut shown = old.to_vec();
        apply(&mut shown, &edits);
        assert_eq!(shown, new, "edits {edits:#?}");
        edits
    }

    #[test]
    fn an_unchanged_menu_needs_no_edit() {
        let lines = menu(vec![agent("a", "Working", &[]), attach("b")]);
        assert_eq!(check(&lines, &lines), Vec::new());
    }

    #[test]
    fn one_agent_changing_state_replaces_only_its_submenu() {
        let names = ["a", "b", "c", "d", "e", "f"];
        let old = menu(names.iter().map(|n| agent(n, "Working", &[])).collect());
        let mut lines: Vec<Entry> = names.iter().map(|n| agent(n, "Working", &[])).collect();
        lines[3] = agent("d", "Error", &["retry"]);
        let new = menu(lines);
        assert_eq!(
            check(&old, &new),
            vec![
                Edit::Remove { at: 3 },
                Edit::Insert {
                    at: 3,
                    entry: &new[3]
                },
            ]
        );
    }

    #[test]
    fn a_submenu_that_keeps_its_title_is_edited_inside() {
        let old = menu(vec![
            agent("a", "Working", &[]),
            agent("b", "Error", &["retry"]),
        ]);
        let new = menu(vec![agent("a", "Working", &[]), agent("b", "Error", &[])]);
        assert_eq!(
            check(&old, &new),
            vec![Edit::Within {
                at: 1,
                edits: vec![Edit::Remove { at: 1 }],
            }]
        );
    }

    #[test]
    fn an_agent_that_comes_to_need_you_moves_up_without_touching_the_others() {
        let old = menu(vec![
            agent("a", "Working", &[]),
            agent("b", "Working", &[]),
            agent("c", "Working", &["approve", "deny"]),
        ]);
        let new = menu(vec![
            agent("c", "Needs approval", &["approve", "deny"]),
            agent("a", "Working", &[]),
            agent("b", "Working", &[]),
        ]);
        assert_eq!(
            check(&old, &new),
            vec![
                Edit::Insert {
                    at: 0,
                    entry: &new[0]
                },
                Edit::Remove { at: 3 },
            ]
        );
    }

    #[test]
    fn a_runtime_that_goes_is_removed_and_one_that_comes_is_inserted() {
        let old = menu(vec![attach("a"), attach("b"), attach("c")]);
        let new = menu(vec![attach("a"), attach("c"), attach("d")]);
        let edits = check(&old, &new);
        assert_eq!(
            edits,
            vec![
                Edit::Remove { at: 1 },
                Edit::Insert {
                    at: 2,
                    entry: &new[2]
                },
            ]
        );
    }

    #[test]
    fn a_runtime_whose_agent_appears_turns_from_an_item_into_a_submenu() {
        let old = menu(vec![attach("a"), attach("b")]);
        let new = menu(vec![attach("a"), agent("b", "Idle", &[])]);
        assert_eq!(
            check(&old, &new),
            vec![
                Edit::Remove { at: 1 },
                Edit::Insert {
                    at: 1,
                    entry: &new[1]
                },
            ]
        );
    }

    #[test]
    fn one_line_changed_among_thousands_is_one_edit() {
        let names: Vec<String> = (0..5_000).map(|i| format!("r{i}")).collect();
        let old = menu(names.iter().map(|n| attach(n)).collect());
        let mut lines: Vec<Entry> = names.iter().map(|n| attach(n)).collect();
        lines[4_321] = item(MenuId::Attach("lre_r4321".into()), "Attach r4321 (renamed)");
        let new = menu(lines);
        assert_eq!(
            check(&old, &new),
            vec![Edit::Label {
                at: 4_321,
                label: "Attach r4321 (renamed)"
            }]
        );
    }

    #[test]
    fn a_check_mark_and_a_greyed_out_line_change_in_place() {
        let old = menu(vec![Entry::Item {
            id: MenuId::NoRuntimes,
            label: "No live runtimes".into(),
            enabled: false,
        }]);
        let mut new = vec![Entry::Item {
            id: MenuId::NoRuntimes,
            label: "No live runtimes".into(),
            enabled: true,
        }];
        new.extend(app_items(false));
        assert_eq!(
            check(&old, &new),
            vec![
                Edit::Enabled {
                    at: 0,
                    enabled: true
                },
                Edit::Checked {
                    at: 3,
                    checked: false
                },
            ]
        );
    }

    #[test]
    fn separators_and_repeated_ids_are_matched_by_their_order() {
        let revive = |name: &str| item(MenuId::Revive(format!("lre_{name}")), "Revive");
        let old = menu(vec![attach("a"), Entry::Separator, revive("x")]);
        let new = menu(vec![
            attach("a"),
            attach("a"),
            Entry::Separator,
            revive("y"),
        ]);
        check(&old, &new);
        check(&new, &old);
        check(&old, &app_items(true));
        check(&app_items(true), &old);
    }

    /// Every pair from a set of menus that differ in every way the tray's do: order, kinds,
    /// submenu contents, separators, check marks. Whatever the two, the edits reach the new one.
    #[test]
    fn any_menu_turns_into_any_other() {
        let menus = vec![
            app_items(true),
            menu(vec![attach("a")]),
            menu(vec![
                attach("a"),
                attach("b"),
                Entry::Separator,
                attach("c"),
            ]),
            menu(vec![agent("a", "Working", &[]), attach("b")]),
            menu(vec![
                agent("b", "Needs input", &["reply"]),
                agent("a", "Working", &[]),
            ]),
            menu(vec![
                agent("a", "Needs approval", &["approve", "deny"]),
                agent("b", "Error", &["retry"]),
                attach("c"),
                Entry::Separator,
                item(MenuId::Revive("lre_d".into()), "Revive d…"),
                Entry::Separator,
                item(MenuId::Approve("p".into()), "Approve registration \"p\""),
            ]),
            {
                let mut m = vec![agent("c", "Idle", &["deny", "approve"]), attach("a")];
                m.extend(app_items(false));
                m
            },
        ];
        for old in &menus {
            for new in &menus {
                check(old, new);
            }
        }
    }
}
