-- Runs once, on the first start of the compose PostgreSQL volume (deploy/docker-compose.yml).
CREATE ROLE pressroom LOGIN PASSWORD 'pressroom';
CREATE DATABASE pressroom OWNER pressroom;
