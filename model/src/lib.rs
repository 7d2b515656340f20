//! seglog-model: the reference spec and stateright models (see README.md).
