-- A poll can be a native poll (MSC3381): a restart ends it instead of editing it.
ALTER TABLE open_polls ADD COLUMN native INTEGER NOT NULL DEFAULT 0;
