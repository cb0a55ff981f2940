/**
 * Below this many rows a drift window says nothing: its verdict is `insufficient`, never `ok`.
 * Its own module so the console's browser bundle can import it without the statistics.
 */
export const MIN_WINDOW_ROWS = 1_000
