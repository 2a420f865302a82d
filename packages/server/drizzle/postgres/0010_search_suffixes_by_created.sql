-- The suffix rows of 0009 in a second order, for a q with a date range (src/search/postgres-suffixes.ts,
-- route prefix_dates): the rows whose suffix starts with the term's first 3 characters and whose file
-- was created in the range are one range of this b-tree. The rest of the term, next_lcp and ext are
-- tested on its entries, which also carry file_id: the table is not read. Kept by PostgreSQL with the
-- table (the trigger of 0009 writes the rows); esync_search_recount() refills the table and this index.
CREATE INDEX "search_suffixes_by_created" ON "search_suffixes"
	USING btree ("owner_id", left("suffix", 3), "created_at") INCLUDE ("suffix", "next_lcp", "ext", "file_id");
