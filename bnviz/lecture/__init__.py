"""The lecture view's content: the guided tour of the BN paper's story and its critics
(:mod:`~bnviz.lecture.tour`), what each step shows for a state of the lecture's sliders
(:mod:`~bnviz.lecture.scenes`), the slides written from them (:mod:`~bnviz.lecture.slides`)
and the QR code of a shared state (:mod:`~bnviz.lecture.qr`). No dash here."""
