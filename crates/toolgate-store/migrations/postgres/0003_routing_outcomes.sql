-- Outcomes of routed turns (the router's fitted confidence and whether the routed
-- groups held every group the turn used), per catalog: a key the caller chooses, a
-- fingerprint of the groups routed over. They seed the router's online calibration
-- in the next process. Each catalog keeps its newest 2,000 (KEPT_ROUTING_OUTCOMES);
-- recording one more deletes the oldest beyond them. The id is the recording order.
CREATE TABLE routing_outcomes (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    catalog            TEXT NOT NULL,
    fitted_confidence  DOUBLE PRECISION NOT NULL CHECK (fitted_confidence BETWEEN 0 AND 1),
    held               BOOLEAN NOT NULL,
    recorded_ms        BIGINT NOT NULL
);

-- Reading a catalog's newest outcomes, and pruning its oldest, read this index alone.
CREATE INDEX routing_outcomes_catalog ON routing_outcomes (catalog, id);
