-- The groups a routed turn used that its decision did not route, as a JSON array of
-- group names ('[]' when the routed groups held, and for outcomes recorded before).
-- They seed the router's learned recovery groups in the next process.
ALTER TABLE routing_outcomes ADD COLUMN missed TEXT NOT NULL DEFAULT '[]';
