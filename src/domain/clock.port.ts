/** The time as the service sees it; tests inject one they can move forward. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();
