"""sentence-transformers inline in FastAPI: the naive embedding server (no batching at all).

    EMBED_MODEL_DIR=... uvicorn st_fastapi:app --port 18700

Answers OpenAI's ``POST /v1/embeddings`` (``input``: a text or a list): each request's
texts go through ``SentenceTransformer.encode`` in the handler, on one torch thread.
"""

from __future__ import annotations

import os

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from sentence_transformers import SentenceTransformer

torch.set_num_threads(1)
model = SentenceTransformer(os.environ["EMBED_MODEL_DIR"], device="cpu")
app = FastAPI()


class EmbeddingRequest(BaseModel):
    input: str | list[str]
    model: str = ""


@app.post("/v1/embeddings")
def embeddings(request: EmbeddingRequest) -> dict[str, object]:
    texts = [request.input] if isinstance(request.input, str) else request.input
    vectors = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    return {
        "object": "list",
        "model": request.model,
        "data": [
            {"object": "embedding", "index": i, "embedding": vector.tolist()}
            for i, vector in enumerate(vectors)
        ],
    }
