-- The app database of Ragloom before accounts (commit dccb3c2, the schema of the previous
-- release): made by that version's create_all, with one indexed file and one conversation.
-- Regenerate: check that commit out, index a file, ask once, then sqlite3 ragloom.db .dump
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE indices (
	id INTEGER NOT NULL, 
	name VARCHAR NOT NULL, 
	index_type VARCHAR NOT NULL, 
	config JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO indices VALUES(1,'My files','ragloom_app.index.file.FileIndex','{}','2026-12-02 00:06:24.453866');
CREATE TABLE conversations (
	id VARCHAR NOT NULL, 
	title VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO conversations VALUES('a6b513ddd4d44aa2b99b7fdfa1de1b78','How hot is the reactor?','2026-12-02 00:06:25.862698','2026-12-02 00:06:25.867102');
CREATE TABLE sources (
	id VARCHAR NOT NULL, 
	index_id INTEGER NOT NULL, 
	name VARCHAR NOT NULL, 
	sha256 VARCHAR NOT NULL, 
	size INTEGER NOT NULL, 
	owner VARCHAR NOT NULL, 
	status VARCHAR(8) NOT NULL, 
	reason VARCHAR, 
	chunk_count INTEGER NOT NULL, 
	stored_path VARCHAR, 
	attempts INTEGER NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(index_id) REFERENCES indices (id)
);
INSERT INTO sources VALUES('fb9b63dd86d748c8a483a3acdd1831f6',1,'reactor.md','8627fb0e53ecd546c58b99f4496687c337be99600053f30257cfa83fa6804e13',39,'local','INDEXED',NULL,1,'/tmp/olddb/data/indices/1/files/8627fb0e53ecd546c58b99f4496687c337be99600053f30257cfa83fa6804e13.md',1,'2026-12-02 00:06:24.536841','2026-12-02 00:06:25.858610');
CREATE TABLE messages (
	id INTEGER NOT NULL, 
	conversation_id VARCHAR NOT NULL, 
	role VARCHAR NOT NULL, 
	content VARCHAR NOT NULL, 
	mode VARCHAR, 
	citations JSON, 
	grounding JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(conversation_id) REFERENCES conversations (id)
);
INSERT INTO messages VALUES(1,'a6b513ddd4d44aa2b99b7fdfa1de1b78','user','How hot is the reactor?',NULL,'[]','null','2026-12-02 00:06:25.864917');
INSERT INTO messages VALUES(2,'a6b513ddd4d44aa2b99b7fdfa1de1b78','assistant','451 kelvin [1].','fullqa','[]','null','2026-12-02 00:06:25.867051');
CREATE TABLE chunks (
	id VARCHAR NOT NULL, 
	source_id VARCHAR NOT NULL, 
	index_id INTEGER NOT NULL, 
	page INTEGER, 
	start INTEGER NOT NULL, 
	"end" INTEGER NOT NULL, 
	text VARCHAR NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(source_id) REFERENCES sources (id)
);
INSERT INTO chunks VALUES('fb9b63dd86d748c8a483a3acdd1831f6-00000','fb9b63dd86d748c8a483a3acdd1831f6',1,NULL,0,39,'The Zorblax reactor runs at 451 kelvin.');
CREATE UNIQUE INDEX ix_indices_name ON indices (name);
CREATE INDEX ix_sources_index_id ON sources (index_id);
CREATE INDEX ix_sources_sha256 ON sources (sha256);
CREATE INDEX ix_messages_conversation_id ON messages (conversation_id);
CREATE INDEX ix_chunks_source_id ON chunks (source_id);
CREATE INDEX ix_chunks_index_id ON chunks (index_id);
COMMIT;
