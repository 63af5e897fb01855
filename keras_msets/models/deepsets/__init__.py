"""DeepSets and Complex DeepSets (DeBenedetto & Chiang, Sec. 5)."""
