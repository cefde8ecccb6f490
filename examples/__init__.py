"""The bundled example: fixture sources and the job spec that researches them."""
