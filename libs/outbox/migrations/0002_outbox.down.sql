DROP TABLE outbox_dead;
DROP TABLE outbox;
