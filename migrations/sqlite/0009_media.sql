-- Files that go with a waiting prompt (a picture, a file, audio, video; and pictures sent
-- just before it without a question), as JSON: fetched at the prompt's turn, so a restart
-- between its admission and its turn keeps them.
ALTER TABLE pending_inputs ADD COLUMN media TEXT;
