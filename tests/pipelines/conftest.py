import pytest

from tests.pipelines.common import VOCAB


@pytest.fixture(scope="session")
def vocab_file():
    return VOCAB


@pytest.fixture(scope="session")
def tokenizer():
    import pipelines

    return pipelines.BertTokenizer(VOCAB)


@pytest.fixture(scope="session")
def reference():
    from tests.pipelines.reference_tokenizer import ReferenceTokenizer

    return ReferenceTokenizer(VOCAB)
