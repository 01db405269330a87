"""Reading gg's stream without a database: one stored line decoded (`record`), the vocabulary
(`vocabulary`), usage arithmetic and the token figure (`usage`), a capability set's profiles
(`profiles`). The write path, the fold, the feed and the pages all read records through here."""
