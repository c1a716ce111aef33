/* Placeholder: the deck implementation lands here. */
typedef int rw_deck_placeholder;
