ALTER TABLE clients DROP COLUMN id_token_alg;
