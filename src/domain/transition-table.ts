/** One row of a state machine: `event` moves a thing in state `from` to state `to`. */
export interface Transition<S extends string, E extends string, To extends S = S> {
  from: S;
  event: E;
  to: To;
}

export interface Move<S extends string, E extends string> {
  event: E;
  /** Every state the event may leave from: the guard of a compare-and-set update. */
  from: S[];
  to: S;
}

/**
 * Each event's move, from a transition table whose every event leads to one state; the lookup
 * throws for an event the table does not know.
 */
export function movesOf<S extends string, E extends string>(kind: string, table: readonly Transition<S, E>[]): (event: E) => Move<S, E> {
  const moves = new Map<E, Move<S, E>>();
  for (const t of table) {
    const move = moves.get(t.event) ?? { event: t.event, from: [], to: t.to };
    if (move.to !== t.to) throw new Error(`${kind} event ${t.event} leads to two states`);
    if (!move.from.includes(t.from)) move.from.push(t.from);
    moves.set(t.event, move);
  }
  return (event) => {
    const move = moves.get(event);
    if (!move) throw new Error(`no transition for ${kind} event ${event}`);
    return move;
  };
}
