"""arclight's PyTorch engine worker: Hugging Face models (full or LoRA fine-tuning) behind arclight's remote-engine
protocol. Start it with `arclight-torch serve --model PATH|new:NAME`."""

__version__ = "0.1.0"
