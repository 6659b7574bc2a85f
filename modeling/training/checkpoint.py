"""Load a run's checkpoint and predict, anywhere torch runs (no Django, no platform).

A checkpoint is one `torch.save` file written by loop.save_checkpoint: the model name, its
resolved config, the vocabulary (`vocab`, index → word) and the weights (`state_dict`), so it
loads without the snapshot it was trained on:

    from modeling.training.checkpoint import load_checkpoint
    model = load_checkpoint("run-12-cbow.pt")
    model.predict("A man plays a guitar on stage.", "A person makes music.")   # 'entailment'
"""

from dataclasses import dataclass

import torch

from modeling.nets import build_net

from .data import LABELS, Vocab, example_from_row, make_batches


@dataclass
class LoadedModel:
    kind: str
    config: dict
    vocab: Vocab
    net: torch.nn.Module
    epoch: int
    labels: tuple = LABELS  # class index -> label (two-way checkpoints: entailed / not-entailed)

    @torch.no_grad()
    def predict_many(self, pairs):
        """Labels for [(premise, hypothesis), ...], in order."""
        examples = [example_from_row({"sentence1": p, "sentence2": h}) for p, h in pairs]
        if self.kind == "majority":
            return [self.labels[int(i)] for i in self.net.predict(len(examples)).tolist()]
        max_len = self.config.get("max_len")
        for ex in examples:
            ex.premise_ids = self.vocab.encode(ex.premise, max_len)
            ex.hypothesis_ids = self.vocab.encode(ex.hypothesis, max_len)
        self.net.eval()
        batch = make_batches(examples, len(examples), bucket=False)[0]
        logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        return [self.labels[i] for i in logits.argmax(dim=-1).tolist()]

    def predict(self, premise, hypothesis):
        return self.predict_many([(premise, hypothesis)])[0]


def load_checkpoint(path, map_location="cpu"):
    saved = torch.load(path, map_location=map_location, weights_only=False)
    config = saved["config"]
    vocab = Vocab([])
    vocab.itos = list(saved["vocab"])
    vocab.stoi = {word: i for i, word in enumerate(vocab.itos)}
    hyper = {k: config[k] for k in ("embedding_dim", "hidden_dim", "dropout", "mlp_layers") if k in config}
    labels = tuple(saved.get("labels") or LABELS)
    net = build_net(saved["model"], len(vocab), num_classes=len(labels), **hyper)
    net.load_state_dict(saved["state_dict"])
    return LoadedModel(
        kind=saved["model"], config=config, vocab=vocab, net=net, epoch=saved.get("epoch", 0), labels=labels
    )
