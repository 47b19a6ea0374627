"""Mixed-precision training under Keras' own dtype policies, with live records.

A small MLP or CNN (Keras 3 on TensorFlow) learns scikit-learn's bundled
handwritten digits (``sklearn.datasets.load_digits``: 1797 8x8 images, no
download) under one of six policies:

=============================  ====================================================
``float32``                     Keras' ``"float32"`` policy
``mixed_float16``               ``"mixed_float16"`` + ``keras.optimizers.LossScaleOptimizer``
``mixed_float16_no_scaling``    ``"mixed_float16"``, plain optimizer (no loss scaling)
``mixed_bfloat16``              ``"mixed_bfloat16"``
``float16``                     ``keras.config.set_floatx("float16")``: variables,
                                compute, optimizer state and loss all in float16
``bfloat16``                    ``set_floatx("bfloat16")``: the same in bfloat16
=============================  ====================================================

The training step is a ``tf.GradientTape`` inside a ``tf.function`` so that the
gradients can be inspected before the optimizer sees them.  The loss scale is
read from the ``LossScaleOptimizer``'s own ``dynamic_scale`` variable, the loss
is scaled with its ``scale_loss`` and the update (skip + halve on a non-finite
gradient, double after ``dynamic_growth_steps`` clean steps) is its ``apply``.

Gradient statistics are taken on the gradients the optimizer receives (scaled,
when loss scaling is on).  Under a mixed policy the gradient of a float32
variable is the float32 cast of a float16 (or bfloat16) gradient, so its zeros,
subnormals and non-finite values are those of the compute dtype.
(TensorFlow's CPU kernels flush float32 subnormals to zero, so float32 and
bfloat16 runs show hardly any subnormals; float16's are real.)

Each run calls ``keras.utils.set_random_seed(seed)`` (Python, NumPy and TensorFlow
global seeds), builds its model with seeded initialisers and shuffles with its own
NumPy generator, so a run is repeatable on the same machine.

Scenarios
---------
``default``
    Cross-entropy loss, Adam, the MLP 60-64-64-10 (ReLU) or a two-conv CNN.
``underflow``
    The same model but its loss multiplied by ``2**-18`` (``UNDERFLOW_LOSS_MULTIPLIER``),
    standing in for the tiny gradients of large models (Micikevicius et al. 2018,
    Fig. 3).  Adam is invariant to the scale of the gradient (its epsilon is set
    far below the gradients), so in float32 the run matches the default one; in
    float16 without loss scaling most gradient elements flush to zero and
    training stalls; dynamic loss scaling brings them back into range.  The
    recorded ``loss`` is always the plain cross-entropy (without the multiplier).

Records stream to ``callback`` as they happen (``StepRecord``, ``EpochRecord``,
``GradientHistogram``); a ``threading.Event`` passed as ``cancel`` stops the run
between steps (the result then has ``cancelled=True``).  ``start_training``
runs several policies in a background :class:`~explorer.runtime.jobs.Job`.

Keras' dtype policy is thread-local, but ``floatx`` is process-wide: runs hold a
module lock and restore both in ``finally``.

The code is split by what it holds, and every name is re-exported here:

- :mod:`~explorer.training.config`: policies, ``TrainingConfig`` and its
  checks, the records (``StepRecord``, ``EpochRecord``, ``GradientHistogram``) and
  ``TrainingResult``;
- :mod:`~explorer.training.data`: the digits (``load_digits_data``);
- :mod:`~explorer.training.keras_loop`: Keras' global state, the model,
  the optimizer and the training loop (``train``, ``run_policies``);
- :mod:`~explorer.training.job`: ``start_training`` (in this process, in a thread);
- :mod:`~explorer.training.queue`: the machine-wide first-come-first-served queue
  of training runs (SQLite, ``$PX_TRAINING_SLOTS`` slots) shared by every visitor's kernel;
- :mod:`~explorer.training.workers`: one run in a worker process of its own, its
  records streamed back through a pipe;
- :mod:`~explorer.training.parallel`: ``train_in_workers``, several runs side by
  side through the queue (what the app's Training tab uses: its kernel never imports
  TensorFlow).

>>> from explorer.training import POLICY_NAMES
>>> POLICY_NAMES[:2]
('float32', 'mixed_float16')
"""

from __future__ import annotations

from explorer.training.config import (
    ALL_POLICY_NAMES,
    DEFAULT_EPOCHS,
    FP8_POLICY,
    MAX_BATCH_SIZE,
    MAX_EPOCHS,
    MAX_HISTOGRAM_STEPS,
    MAX_INITIAL_SCALE,
    MAX_SEED,
    MODELS,
    POLICIES,
    POLICY_NAMES,
    SCENARIOS,
    UNDERFLOW_LOSS_MULTIPLIER,
    EpochRecord,
    GradientHistogram,
    PolicySpec,
    Record,
    StepRecord,
    TrainingConfig,
    TrainingResult,
    policy_spec,
)
from explorer.training.data import DigitsData, load_digits_data
from explorer.training.job import start_training
from explorer.training.keras_loop import (
    HISTOGRAM_EDGES,
    build_model,
    keras_policy,
    make_optimizer,
    run_policies,
    train,
)

__all__ = [
    "ALL_POLICY_NAMES",
    "DEFAULT_EPOCHS",
    "FP8_POLICY",
    "HISTOGRAM_EDGES",
    "MAX_BATCH_SIZE",
    "MAX_EPOCHS",
    "MAX_HISTOGRAM_STEPS",
    "MAX_INITIAL_SCALE",
    "MAX_SEED",
    "MODELS",
    "POLICIES",
    "POLICY_NAMES",
    "SCENARIOS",
    "UNDERFLOW_LOSS_MULTIPLIER",
    "DigitsData",
    "EpochRecord",
    "GradientHistogram",
    "PolicySpec",
    "Record",
    "StepRecord",
    "TrainingConfig",
    "TrainingResult",
    "build_model",
    "keras_policy",
    "load_digits_data",
    "make_optimizer",
    "policy_spec",
    "run_policies",
    "start_training",
    "train",
]
