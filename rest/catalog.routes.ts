import {
  createPriceInput, createProductInput, listPricesInput, listProductsInput, updatePriceInput, updateProductInput,
} from '../src/modules/catalog/catalog.inputs';
import { priceSchema, productSchema } from '../src/modules/catalog/catalog.schemas';
import { route } from './route-table';

export const catalogRoutes = [
  route.one({
    method: 'POST', path: '/products', operationId: 'createProduct', tag: 'Products', summary: 'Create a product',
    permission: 'products:write', idempotent: 'createProduct', body: createProductInput, response: productSchema, errors: [],
    example: { name: 'Pro plan', description: 'Everything in Basic, and more' },
    handle: (s, r) => s.catalog.createProduct(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/products', operationId: 'listProducts', tag: 'Products', summary: 'List products',
    permission: 'products:read', query: listProductsInput, response: productSchema, errors: [],
    handle: (s, r) => s.catalog.listProducts(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/products/{id}', operationId: 'retrieveProduct', tag: 'Products', summary: 'Retrieve a product',
    permission: 'products:read', response: productSchema, errors: [],
    handle: (s, r) => s.catalog.retrieveProduct(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/products/{id}', operationId: 'updateProduct', tag: 'Products', summary: 'Update a product',
    permission: 'products:write', body: updateProductInput, response: productSchema, errors: [],
    example: { active: false },
    handle: (s, r) => s.catalog.updateProduct(r.rc, r.param('id'), r.body),
  }),

  route.one({
    method: 'POST', path: '/prices', operationId: 'createPrice', tag: 'Prices', summary: 'Create a price of a product',
    permission: 'prices:write', idempotent: 'createPrice', body: createPriceInput, response: priceSchema, errors: [],
    example: { productId: 'prod_8Zq2mB4kTn1xYw', unitAmount: 1900, currency: 'EUR', recurring: { interval: 'month' } },
    handle: (s, r) => s.catalog.createPrice(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/prices', operationId: 'listPrices', tag: 'Prices', summary: 'List prices',
    permission: 'prices:read', query: listPricesInput, response: priceSchema, errors: [],
    handle: (s, r) => s.catalog.listPrices(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/prices/{id}', operationId: 'retrievePrice', tag: 'Prices', summary: 'Retrieve a price',
    permission: 'prices:read', response: priceSchema, errors: [],
    handle: (s, r) => s.catalog.retrievePrice(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/prices/{id}', operationId: 'updatePrice', tag: 'Prices', summary: 'Update a price (nickname, active, metadata)',
    permission: 'prices:write', body: updatePriceInput, response: priceSchema, errors: [],
    example: { nickname: 'Monthly' },
    handle: (s, r) => s.catalog.updatePrice(r.rc, r.param('id'), r.body),
  }),
];
